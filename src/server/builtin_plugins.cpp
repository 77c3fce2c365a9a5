// The plugins built into cppcdc: the only place in the server that names a connector, a sink,
// a checkpoint backend or a codec. Everything else asks the registry (cppcdc/plugin.hpp).

#include <mutex>

#include "cppcdc/avro.hpp"
#include "cppcdc/cloudevents.hpp"
#include "cppcdc/debezium.hpp"
#include "cppcdc/glue.hpp"
#include "cppcdc/http_sink.hpp"
#include "cppcdc/json_schema.hpp"
#include "cppcdc/kafka.hpp"
#include "cppcdc/mysql.hpp"
#include "cppcdc/plugin.hpp"
#include "cppcdc/postgres.hpp"
#include "cppcdc/postgresql_checkpoint.hpp"
#include "cppcdc/protobuf.hpp"
#include "cppcdc/redis_checkpoint.hpp"
#include "cppcdc/sqlserver.hpp"
#include "server/config.hpp"

namespace cppcdc::server {

void register_builtin_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    pg::register_plugin();
    mysql::register_plugin();
    sqlserver::register_plugin();  // reserved: not built yet
    register_json_codec_plugin();
    register_avro_codec_plugin();
    register_glue_avro_codec_plugin();  // schema_registry.type = "glue" of codec "avro"
    register_protobuf_codec_plugin();
    register_debezium_json_codec_plugin();
    register_cloudevents_codec_plugin();
    register_json_schema_codec_plugin();
    register_file_sink_plugin();
    register_stdout_sink_plugin();
    register_http_sink_plugin();
    register_kafka_sink_plugin();
    register_checkpoint_plugins();
    register_kafka_topic_checkpoint_plugin();
    register_postgresql_checkpoint_plugin();
    register_redis_checkpoint_plugin();
  });
}

const DefaultTypes& default_types() {
  static const DefaultTypes defaults{"postgres", "stdout", "local_fs"};
  return defaults;
}

}  // namespace cppcdc::server

// `codec` and `[sink.codec_options]` on every sink type: the default, an unknown codec naming
// the file, the key and the known codecs, binary codecs refused where records are JSON text,
// options checked by the codec, and check-config showing the codec.

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <string>

#include "cppcdc/plugin.hpp"
#include "server/config.hpp"

namespace cppcdc::server {
namespace {

constexpr const char* kHead = R"([source]
dsn = "host=localhost dbname=app"
tables = ["public.t"]

[state.offset]
dir = "/tmp/state"

)";

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::string error_of(const std::string& sink) {
  auto config = parse_server_config(kHead + sink, "cdc.toml");
  if (config) return "(no error)";
  EXPECT_EQ(config.error().kind(), ErrorKind::kConfiguration) << config.error().report();
  return config.error().report();
}

std::string described(const std::string& sink) {
  auto config = parse_server_config(kHead + sink, "cdc.toml");
  if (!config) return "(error) " + config.error().report();
  return describe_config(*config);
}

const char* const kKafka = "[sink]\ntype = \"kafka\"\nbootstrap_servers = \"127.0.0.1:1\"\n";

TEST(CodecConfig, EverySinkDefaultsToJsonAndShowsItsCodec) {
  for (const std::string& sink :
       {std::string("[sink]\ntype = \"stdout\"\n"),
        std::string("[sink]\ntype = \"file\"\npath = \"/tmp/x.jsonl\"\n"),
        std::string("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n"), std::string(kKafka)}) {
    EXPECT_TRUE(std::regex_search(described(sink), std::regex("codec: +json\n")))
        << described(sink);
    EXPECT_TRUE(std::regex_search(described(sink + "codec = \"debezium_json\"\n"),
                                  std::regex("codec: +debezium_json\n")));
  }
}

TEST(CodecConfig, AnUnknownCodecNamesTheFileTheKeyAndTheKnownCodecs) {
  const std::string e = error_of("[sink]\ntype = \"stdout\"\ncodec = \"thrift\"\n");
  EXPECT_CONTAINS(e, "cdc.toml");
  EXPECT_CONTAINS(e, "[sink] codec");
  EXPECT_CONTAINS(e,
                  "\"avro\", \"cloudevents\", \"debezium_json\", \"json\", \"json_schema\" or "
                  "\"protobuf\"");
  EXPECT_CONTAINS(e, "found \"thrift\"");
  const std::string k = error_of(std::string(kKafka) + "codec = \"jsn\"\n");
  EXPECT_CONTAINS(k, "[sink] codec");
  EXPECT_CONTAINS(k, "found \"jsn\"");
}

TEST(CodecConfig, BinaryCodecsAreRefusedWhereRecordsAreJsonText) {
  for (const std::string& sink :
       {std::string("[sink]\ntype = \"stdout\"\n"),
        std::string("[sink]\ntype = \"file\"\npath = \"/tmp/x.jsonl\"\n"),
        std::string("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n")}) {
    for (const std::string& codec :
         {std::string("avro\"\n"), std::string("protobuf\"\n"),
          std::string("json_schema\"\n[sink.codec_options]\nschema_id = 1\nkey_schema_id = 2\n")}) {
      const std::string e = error_of(sink + "codec = \"" + codec);
      EXPECT_CONTAINS(e, "[sink] codec");
      EXPECT_CONTAINS(e, "writes binary records");
    }
  }
  EXPECT_CONTAINS(described(std::string(kKafka) + "codec = \"avro\"\n"), "bare Avro");
  EXPECT_CONTAINS(described(std::string(kKafka) + "codec = \"protobuf\"\n"),
                  "bare Protobuf messages cppcdc.v1.Event");
}

TEST(CodecConfig, CodecOptionsAreTheCodecsToCheck) {
  // json takes no options: an unknown key is refused where it is written.
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\n[sink.codec_options]\nfoo = 1\n"),
                  "foo: unknown key");
  const std::string avro = std::string(kKafka) + "codec = \"avro\"\n";
  EXPECT_CONTAINS(error_of(avro + "[sink.codec_options.schema_registry]\nauto_register = false\n"),
                  "url: required");
  EXPECT_CONTAINS(error_of(avro + "[sink.codec_options.schema_registry]\nurl = \"http://r\"\n"
                                  "subject_name_strategy = \"by_topic\"\n"),
                  "subject_name_strategy");
  EXPECT_CONTAINS(error_of(avro + "[sink.codec_options.schema_registry]\nurl = \"http://r\"\n"
                                  "username = \"u\"\n"),
                  "password");
  const std::string ok = described(avro +
                                   "[sink.codec_options.schema_registry]\n"
                                   "url = \"http://u:secret-pw@registry:8081\"\n"
                                   "auto_register = false\n"
                                   "subject_name_strategy = \"topic_record_name\"\n");
  EXPECT_CONTAINS(ok, "Confluent");
  EXPECT_CONTAINS(ok, "topic_record_name, looked up only (auto_register = false)");
  EXPECT_EQ(ok.find("secret-pw"), std::string::npos) << ok;
  const std::string keys = described(avro +
                                     "[sink.codec_options.schema_registry]\n"
                                     "url = \"http://registry:8081\"\n"
                                     "username = \"u\"\npassword = \"p-secret\"\n");
  EXPECT_CONTAINS(keys, "Confluent");
  EXPECT_EQ(keys.find("p-secret"), std::string::npos) << keys;
  // protobuf takes the same registry table, checked the same way.
  const std::string protobuf = std::string(kKafka) + "codec = \"protobuf\"\n";
  EXPECT_CONTAINS(
      error_of(protobuf + "[sink.codec_options.schema_registry]\nauto_register = false\n"),
      "url: required");
  EXPECT_CONTAINS(error_of(protobuf + "[sink.codec_options.schema_registry]\nurl = \"http://r\"\n"
                                      "subject_name_strategy = \"by_topic\"\n"),
                  "subject_name_strategy");
  EXPECT_CONTAINS(error_of(protobuf + "[sink.codec_options]\nschema_registy = 1\n"),
                  "schema_registy: unknown key");
  const std::string pb = described(protobuf +
                                   "[sink.codec_options.schema_registry]\n"
                                   "url = \"http://u:secret-pw@registry:8081\"\n"
                                   "subject_name_strategy = \"record_name\"\n");
  EXPECT_CONTAINS(pb, "Confluent (magic byte 0, 4-byte schema id, message indexes)");
  EXPECT_CONTAINS(pb, "record_name, registered when missing (auto_register)");
  EXPECT_EQ(pb.find("secret-pw"), std::string::npos) << pb;
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"debezium_json\"\n"
                           "[sink.codec_options]\nschemas_enable = \"yes\"\n"),
                  "schemas_enable");
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"debezium_json\"\n"
                           "[sink.codec_options]\nconnector = \"oracle\"\n"),
                  "connector: expected \"postgresql\", \"mysql\" or \"mariadb\"");
  EXPECT_CONTAINS(described("[sink]\ntype = \"stdout\"\ncodec = \"debezium_json\"\n"
                            "[sink.codec_options]\nschemas_enable = true\n"),
                  "schemas_enable = true");
  EXPECT_CONTAINS(described("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n"
                            "codec = \"cloudevents\"\n[sink.codec_options]\n"
                            "source = \"//db.example.com/app\"\n"),
                  "structured JSON, source \"//db.example.com/app\", type io.cppcdc.<op>");
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"cloudevents\"\n"
                           "[sink.codec_options]\ntype_prefix = \"\"\n"),
                  "type_prefix");
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"cloudevents\"\n"
                           "[sink.codec_options]\ntyp_prefix = \"x\"\n"),
                  "typ_prefix: unknown key");
  // Binary mode: only sinks that carry headers take it; HTTP with one event per request.
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"cloudevents\"\n"
                           "[sink.codec_options]\nmode = \"binary\"\n"),
                  "[sink] codec: codec \"cloudevents\" as configured puts part of each record "
                  "into headers");
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n"
                           "codec = \"cloudevents\"\n[sink.codec_options]\nmode = \"binary\"\n"),
                  "[sink] batch_max_events: codec \"cloudevents\" puts each event's attributes");
  EXPECT_CONTAINS(described("[sink]\ntype = \"http\"\nurl = \"http://r:8080/\"\n"
                            "batch_max_events = 1\ncodec = \"cloudevents\"\n"
                            "[sink.codec_options]\nmode = \"binary\"\n"),
                  "binary mode (attributes as headers)");
  EXPECT_CONTAINS(described(std::string(kKafka) +
                            "codec = \"cloudevents\"\n[sink.codec_options]\nmode = \"binary\"\n"),
                  "binary mode (attributes as headers)");
  EXPECT_CONTAINS(error_of("[sink]\ntype = \"stdout\"\ncodec = \"cloudevents\"\n"
                           "[sink.codec_options]\nmode = \"binery\"\n"),
                  "mode: expected \"structured\"");
}

// The registry's secrets may come from the environment, as the source's password_env; the
// variable is named in check-config, the secret never.
TEST(CodecConfig, RegistryPasswordAndTokenComeFromTheEnvironmentAndStayHidden) {
  ::setenv("CPPCDC_TEST_REGISTRY_PW", "pw-from-env", 1);
  ::setenv("CPPCDC_TEST_REGISTRY_TOKEN", "token-from-env", 1);
  ::unsetenv("CPPCDC_TEST_REGISTRY_UNSET");
  const std::string avro = std::string(kKafka) + "codec = \"avro\"\n" +
                           "[sink.codec_options.schema_registry]\nurl = \"http://r:8081\"\n";
  auto basic = parse_server_config(
      kHead + avro + "username = \"u\"\npassword_env = \"CPPCDC_TEST_REGISTRY_PW\"\n", "cdc.toml");
  ASSERT_TRUE(basic) << basic.error().report();
  const std::string shown = describe_config(*basic);
  // A label longer than the value column still has a space after its colon (a trial saw
  // "registry authentication:basic").
  EXPECT_CONTAINS(shown,
                  "registry authentication: basic, user \"u\", password from the environment "
                  "variable \"CPPCDC_TEST_REGISTRY_PW\"");
  EXPECT_EQ(shown.find("pw-from-env"), std::string::npos) << shown;
  auto bearer = parse_server_config(
      kHead + avro + "bearer_token_env = \"CPPCDC_TEST_REGISTRY_TOKEN\"\n", "cdc.toml");
  ASSERT_TRUE(bearer) << bearer.error().report();
  const std::string token_shown = describe_config(*bearer);
  EXPECT_CONTAINS(token_shown,
                  "bearer token from the environment variable \"CPPCDC_TEST_REGISTRY_TOKEN\"");
  EXPECT_EQ(token_shown.find("token-from-env"), std::string::npos) << token_shown;
  const std::string inline_shown = described(avro + "username = \"u\"\npassword = \"p-inline\"\n");
  EXPECT_CONTAINS(inline_shown, "basic, user \"u\", password (redacted)");
  EXPECT_EQ(inline_shown.find("p-inline"), std::string::npos) << inline_shown;
  // A user part in the url is sent as basic authentication too, so it is shown as such, not
  // as "none" (fresh-user trial of issue 18).
  const std::string in_url = described(std::string(kKafka) + "codec = \"avro\"\n" +
                                       "[sink.codec_options.schema_registry]\n"
                                       "url = \"http://bob:url-secret@r:8081\"\n");
  EXPECT_CONTAINS(in_url, "registry authentication: basic, from the url's user part (user "
                          "\"bob\", password redacted)");
  EXPECT_EQ(in_url.find("url-secret"), std::string::npos) << in_url;
  // Both the url's user part and the keys: refused, not one silently dropped.
  EXPECT_CONTAINS(described(std::string(kKafka) + "codec = \"avro\"\n" +
                            "[sink.codec_options.schema_registry]\n"
                            "url = \"http://bob:url-secret@r:8081\"\nusername = \"u\"\n"
                            "password = \"p\"\n"),
                  "carries a user part (user@host)");

  // A variable that is not set, and both ways at once, are refused naming the key.
  EXPECT_CONTAINS(
      error_of(avro + "username = \"u\"\npassword_env = \"CPPCDC_TEST_REGISTRY_UNSET\"\n"),
      "password_env: the environment variable \"CPPCDC_TEST_REGISTRY_UNSET\" is not set");
  EXPECT_CONTAINS(error_of(avro + "username = \"u\"\npassword = \"p\"\n"
                                  "password_env = \"CPPCDC_TEST_REGISTRY_PW\"\n"),
                  "password_env: set either password or password_env, not both");
  EXPECT_CONTAINS(error_of(avro + "bearer_token = \"t\"\n"
                                  "bearer_token_env = \"CPPCDC_TEST_REGISTRY_TOKEN\"\n"),
                  "bearer_token_env: set either bearer_token or bearer_token_env, not both");
}

// debezium_json's source block follows the source: the connector from the source type
// (MariaDB's is "mariadb"), and for PostgreSQL source.db from the dsn when codec_options do not
// say; what they say wins.
TEST(CodecConfig, DebeziumJsonTakesItsConnectorAndDatabaseFromTheSource) {
  const std::string debezium = "[sink]\ntype = \"stdout\"\ncodec = \"debezium_json\"\n";
  const auto shown = [&](const std::string& source, const std::string& sink) {
    auto config =
        parse_server_config(source + "[state.offset]\ndir = \"/tmp/state\"\n\n" + sink, "cdc.toml");
    if (!config) return "(error) " + config.error().report();
    return describe_config(*config);
  };
  // kHead's dsn names dbname=app.
  EXPECT_CONTAINS(described(debezium),
                  "source block of the postgresql connector, source.db \"app\"");
  EXPECT_CONTAINS(shown("[source]\ndsn = \"postgresql://u@h:5432/shop%2Deu?sslmode=disable\"\n"
                        "tables = [\"public.t\"]\n",
                        debezium),
                  "source.db \"shop-eu\"");
  // No dbname: libpq connects to the user's database.
  EXPECT_CONTAINS(
      shown("[source]\ndsn = \"host=h user='cdc user'\"\ntables = [\"public.t\"]\n", debezium),
      "source.db \"cdc user\"");
  EXPECT_CONTAINS(described(debezium + "[sink.codec_options]\ndatabase = \"other\"\n"),
                  "source.db \"other\"");
  const std::string mariadb =
      "[source]\ntype = \"mariadb\"\nhost = \"127.0.0.1\"\nuser = \"root\"\n"
      "tables = [\"shop.*\"]\n";
  EXPECT_CONTAINS(shown(mariadb, debezium), "source block of the mariadb connector");
  EXPECT_CONTAINS(shown(mariadb,
                        "[sink]\ntype = \"fanout\"\nsinks = [\"a\"]\n\n"
                        "[[sinks]]\nname = \"a\"\ntype = \"stdout\"\n"
                        "codec = \"debezium_json\"\n"),
                  "source block of the mariadb connector");
  EXPECT_CONTAINS(shown(mariadb, debezium + "[sink.codec_options]\nconnector = \"mysql\"\n"),
                  "source block of the mysql connector");
  EXPECT_CONTAINS(shown("[source]\ntype = \"mysql\"\nhost = \"127.0.0.1\"\nuser = \"root\"\n"
                        "tables = [\"shop.*\"]\n",
                        debezium),
                  "source block of the mysql connector");
}

// Confluent's clients take a comma-separated list of registry URLs; cppcdc's client talks to
// one, and says so instead of taking the list for one address.
TEST(CodecConfig, ASeveralUrlRegistryListIsRefusedSayingToGiveOne) {
  const std::string avro =
      std::string(kKafka) + "codec = \"avro\"\n" + "[sink.codec_options.schema_registry]\n";
  const std::string error = error_of(avro + "url = \"http://a:8081,http://b:8081\"\n");
  EXPECT_CONTAINS(error, "url: ");
  EXPECT_CONTAINS(error, "is a list of registry addresses; cppcdc talks to one");
  const std::string spaced = error_of(avro + "url = \"http://a:8081, http://b:8081\"\n");
  EXPECT_CONTAINS(spaced, "is a list of registry addresses");
  EXPECT_EQ(described(avro + "url = \"http://a:8081/?x=1,2\"\n").find("(error)"), std::string::npos)
      << "a comma in the query is no list";
}

TEST(CodecConfig, JsonSchemaTakesItsIdsFromARegistryOrAsFixedIdsNotBoth) {
  const std::string js = std::string(kKafka) + "codec = \"json_schema\"\n";
  const std::string neither = error_of(js);
  EXPECT_CONTAINS(neither, "[sink.codec_options] schema_registry: required");
  EXPECT_CONTAINS(neither, "fixed schema_id and key_schema_id");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options]\nschema_id = 5\n"),
                  "key_schema_id: required (fixed ids come in pairs: schema_id is set");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options]\nkey_schema_id = 5\n"),
                  "schema_id: required (fixed ids come in pairs: key_schema_id is set");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options]\nschema_id = -1\nkey_schema_id = 2\n"),
                  "schema_id");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options]\nschema_id = 1\nkey_schema_id = 2\n"
                                "[sink.codec_options.schema_registry]\nurl = \"http://r:8081\"\n"),
                  "schema_id: fixed schema ids and a [schema_registry] table exclude each other");
  // The registry table takes the avro codec's keys, checked the same way.
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options.schema_registry]\nauto_register = false\n"),
                  "url: required");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options.schema_registry]\nurl = \"http://r\"\n"
                                "subject_name_strategy = \"by_topic\"\n"),
                  "subject_name_strategy");
  EXPECT_CONTAINS(error_of(js + "[sink.codec_options.schema_registry]\nurl = \"http://r\"\n"
                                "colour = \"red\"\n"),
                  "colour: unknown key");
  const std::string fixed =
      described(js + "[sink.codec_options]\nschema_id = 21\nkey_schema_id = 22\n");
  EXPECT_TRUE(std::regex_search(fixed, std::regex("codec: +json_schema\n"))) << fixed;
  EXPECT_CONTAINS(fixed, "Confluent (magic byte 0, 4-byte schema id) around the JSON envelope");
  EXPECT_CONTAINS(fixed, "fixed: 21 (value), 22 (key); no schema registry");
  const std::string registry = described(js +
                                         "[sink.codec_options.schema_registry]\n"
                                         "url = \"http://u:secret-pw@registry:8081\"\n"
                                         "auto_register = false\n"
                                         "subject_name_strategy = \"record_name\"\n");
  EXPECT_CONTAINS(registry, "record_name, looked up only (auto_register = false)");
  EXPECT_EQ(registry.find("secret-pw"), std::string::npos) << registry;
}

TEST(CodecConfig, SchemaRegistryTypeApicurioTakesTheServerRootAndAGroup) {
  const std::string avro =
      std::string(kKafka) + "codec = \"avro\"\n" + "[sink.codec_options.schema_registry]\n";
  const std::string shown =
      described(avro + "type = \"apicurio\"\nurl = \"http://apicurio:8080\"\ngroup = \"cdc\"\n");
  EXPECT_CONTAINS(shown, "http://apicurio:8080 (Apicurio Registry 3 native API, group \"cdc\")");
  EXPECT_CONTAINS(described(avro + "type = \"apicurio\"\nurl = \"http://apicurio:8080\"\n"),
                  "group \"default\"");
  // An API path in url: refused where it is written, with what to do.
  const std::string native =
      error_of(avro + "type = \"apicurio\"\nurl = \"http://apicurio:8080/apis/registry/v3\"\n");
  EXPECT_CONTAINS(native, "url");
  EXPECT_CONTAINS(native, "drop the /apis/registry/... part");
  EXPECT_CONTAINS(error_of(avro + "type = \"apicurio\"\nurl = \"http://a:8080/apis/ccompat/v7\"\n"),
                  "type = \"confluent\"");
  EXPECT_CONTAINS(error_of(avro + "url = \"http://apicurio:8080/apis/registry/v3\"\n"),
                  "type = \"apicurio\"");
  EXPECT_CONTAINS(error_of(avro + "url = \"http://registry:8081\"\ngroup = \"cdc\"\n"), "group");
  EXPECT_CONTAINS(error_of(avro + "type = \"karapace\"\nurl = \"http://registry:8081\"\n"), "type");
  EXPECT_CONTAINS(error_of(avro + "type = \"apicurio\"\nurl = \"http://a:8080\"\n"
                                  "normalize_schemas = true\n"),
                  "normalize_schemas");
}

TEST(CodecConfig, TheRegistryListsTheBuiltInCodecs) {
  ASSERT_TRUE(parse_server_config(std::string(kHead) + "[sink]\ntype = \"stdout\"\n", "cdc.toml"));
  const auto names = codec_names();
  EXPECT_EQ(names, (std::vector<std::string>{"avro", "cloudevents", "debezium_json", "json",
                                             "json_schema", "protobuf"}));
  EXPECT_FALSE(register_codec("json", nullptr)) << "a second registration must be refused";
}

}  // namespace
}  // namespace cppcdc::server

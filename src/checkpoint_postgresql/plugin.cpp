// [state.offset] backend = "postgresql": settings `dsn` (or `dsn_env`, the name of an
// environment variable holding it), `schema` (default "cppcdc"), `table` (default
// "checkpoints").

#include "cppcdc/plugin.hpp"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "checkpoint_postgresql/libpq_util.hpp"
#include "core/settings_read.hpp"
#include "cppcdc/postgresql_checkpoint.hpp"

namespace cppcdc {
namespace {

using detail::in_quotes;

// PostgreSQL keeps the first 63 bytes of a name (NAMEDATALEN - 1); a longer one would be cut
// silently and could meet another's.
constexpr std::size_t kMaxIdentifier = 63;

class ConfiguredPostgresqlCheckpoint final : public ConfiguredCheckpoint {
 public:
  ConfiguredPostgresqlCheckpoint(PostgresqlCheckpointOptions options, std::string dsn_origin)
      : options_(std::move(options)), dsn_origin_(std::move(dsn_origin)) {}

  std::string describe(const std::string& checkpoint_id) const override {
    return "postgresql row " + pgckpt::quote_literal(checkpoint_id) + " of table " +
           pgckpt::quote_ident(options_.schema) + "." + pgckpt::quote_ident(options_.table) +
           " at " + pgckpt::describe_dsn(options_.dsn) + " (" + dsn_origin_ + ")";
  }
  bool durable() const override { return true; }
  Status remove(const std::string& checkpoint_id) const override {
    return remove_postgresql_checkpoint(options_, checkpoint_id);
  }
  Result<std::shared_ptr<Checkpoint>> open(const std::string& checkpoint_id) const override {
    auto opened = open_postgresql_checkpoint(options_, checkpoint_id);
    if (!opened) return fail(std::move(opened).error());
    return std::shared_ptr<Checkpoint>(std::move(*opened));
  }

 private:
  PostgresqlCheckpointOptions options_;
  std::string dsn_origin_;  // "dsn" or "dsn_env NAME"
};

// A schema or table name: used as written (quoted), so any text PostgreSQL keeps whole.
Status read_identifier(const Settings& settings, std::string_view key, std::string& target) {
  CPPCDC_TRY(detail::assign_string(settings, key, target));
  if (target.empty()) return fail(settings.error(key, "expected a name, found an empty string"));
  if (target.size() > kMaxIdentifier) {
    return fail(settings.error(key,
                               "expected at most 63 bytes (PostgreSQL cuts longer names), "
                               "found " +
                                   std::to_string(target.size())));
  }
  if (target.find('\0') != std::string::npos) {
    return fail(settings.error(key, "expected a name without NUL characters"));
  }
  return ok();
}

Result<std::unique_ptr<ConfiguredCheckpoint>> configure_postgresql(const Settings& settings) {
  PostgresqlCheckpointOptions options;
  auto dsn = settings.get_string("dsn");
  if (!dsn) return fail(dsn.error());
  auto env = settings.get_string("dsn_env");
  if (!env) return fail(env.error());
  if (*dsn && *env) {
    return fail(settings.error("dsn_env", "set either dsn or dsn_env, not both"));
  }
  std::string origin = "dsn";
  std::string_view key = "dsn";
  if (*env) {
    const char* value = (*env)->empty() ? nullptr : std::getenv((*env)->c_str());
    if (value == nullptr) {
      return fail(settings.error(
          "dsn_env", "the environment variable " + in_quotes(**env) +
                         " is not set; export it (a libpq connection string) or set dsn"));
    }
    options.dsn = value;
    origin = "dsn_env " + **env;
    key = "dsn_env";
  } else if (*dsn) {
    options.dsn = std::move(**dsn);
  } else {
    return fail(settings.missing(
        "dsn",
        "when backend = \"postgresql\" (a libpq connection string or postgresql:// URI; "
        "or dsn_env naming an environment variable that holds it)"));
  }
  if (options.dsn.empty()) {
    return fail(settings.error(key, "expected a libpq connection string, found an empty string"));
  }
  if (auto checked = pgckpt::check_dsn(options.dsn); !checked) {
    return fail(settings.error(key, checked.error().message()));
  }
  CPPCDC_TRY(read_identifier(settings, "schema", options.schema));
  CPPCDC_TRY(read_identifier(settings, "table", options.table));
  return std::unique_ptr<ConfiguredCheckpoint>(
      std::make_unique<ConfiguredPostgresqlCheckpoint>(std::move(options), std::move(origin)));
}

}  // namespace

void register_postgresql_checkpoint_plugin() {
  static std::once_flag once;
  std::call_once(once,
                 [] { (void)register_checkpoint_backend("postgresql", configure_postgresql); });
}

}  // namespace cppcdc

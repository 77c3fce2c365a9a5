// Source types "mysql" and "mariadb" in the plugin registry; the flavor comes from the type.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/mysql.hpp"
#include "source/mysql/settings.hpp"

namespace cppcdc::mysql {

void register_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_positions();
    (void)register_source_type("mysql", [](const Settings& settings) {
      return configure_mysql_source(settings, ServerFlavor::kMySql);
    });
    (void)register_source_type("mariadb", [](const Settings& settings) {
      return configure_mysql_source(settings, ServerFlavor::kMariaDb);
    });
  });
}

}  // namespace cppcdc::mysql

// Source types mysql, mariadb: reserved in the plugin registry until the source exists.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/mysql.hpp"

namespace cppcdc::mysql {

void register_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_positions();
    (void)register_source_type("mysql", nullptr);
    (void)register_source_type("mariadb", nullptr);
  });
}

}  // namespace cppcdc::mysql

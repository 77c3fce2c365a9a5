// Source type sqlserver: reserved in the plugin registry until the source exists.

#include "cppcdc/plugin.hpp"

#include <mutex>

#include "cppcdc/sqlserver.hpp"

namespace cppcdc::sqlserver {

void register_plugin() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_positions();
    (void)register_source_type("sqlserver", nullptr);
  });
}

}  // namespace cppcdc::sqlserver

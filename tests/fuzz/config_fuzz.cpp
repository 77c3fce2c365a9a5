// libFuzzer target for the cdc.toml loader (src/server/config.cpp). Any input must load or
// give a configuration Error naming the file. A text that parses is also written to a file
// and loaded from there (which resolves relative paths against the file's directory); that
// must succeed too, unless the resolved control socket path is too long for a socket. The
// summary for `cppcdc check-config`, the source's log line and the DSN redaction must cope with
// whatever loaded.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "cppcdc/postgres.hpp"
#include "fuzz_check.hpp"
#include "server/config.hpp"

namespace {

const std::string kOrigin = "fuzz-cdc.toml";

// A directory of its own for the config file, removed at exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cppcdc-config-fuzz-XXXXXX").string();
    CPPCDC_FUZZ_CHECK(::mkdtemp(pattern.data()) != nullptr);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void check_error(const cppcdc::Error& error, std::string_view origin) {
  CPPCDC_FUZZ_CHECK(error.kind() == cppcdc::ErrorKind::kConfiguration);
  CPPCDC_FUZZ_CHECK(error.message().find(origin) != std::string::npos);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)cppcdc::pg::redact_dsn(text);

  auto config = cppcdc::server::parse_server_config(text, kOrigin);
  if (!config) {
    check_error(config.error(), kOrigin);
    return 0;
  }
  (void)cppcdc::server::describe_config(*config);
  (void)config->source->summary();
  (void)config->checkpoint->describe(config->source->checkpoint_id());

  static const TempDir dir;
  const std::filesystem::path file = dir.path() / "cdc.toml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    CPPCDC_FUZZ_CHECK(out.good());
  }
  auto loaded = cppcdc::server::load_server_config(file);
  if (!loaded) {
    check_error(loaded.error(), file.string());
    CPPCDC_FUZZ_CHECK(loaded.error().message().find("control_socket") != std::string::npos);
    return 0;
  }
  CPPCDC_FUZZ_CHECK(loaded->control_socket.is_absolute());
  (void)cppcdc::server::describe_config(*loaded);
  return 0;
}

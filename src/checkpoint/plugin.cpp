// The checkpoint backends as plugins: "local_fs" (settings `dir`, `file_mode`) and "memory" (none).

#include "cppcdc/plugin.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <system_error>

#include "core/file_mode.hpp"
#include "cppcdc/checkpoint.hpp"

namespace cppcdc {
namespace {

class ConfiguredFileCheckpoint final : public ConfiguredCheckpoint {
 public:
  ConfiguredFileCheckpoint(std::filesystem::path dir, unsigned file_mode)
      : dir_(std::move(dir)), file_mode_(file_mode) {}

  std::string describe(const std::string& checkpoint_id) const override {
    return "local_fs " + FileCheckpoint::path_for(dir_, checkpoint_id).string();
  }
  bool durable() const override { return true; }
  std::optional<std::filesystem::path> directory() const override { return dir_; }
  bool may_hold_record(const std::string& checkpoint_id) const override {
    std::error_code ec;
    const bool exists = std::filesystem::exists(FileCheckpoint::path_for(dir_, checkpoint_id), ec);
    return exists || ec;  // when it cannot be told, opening will say why
  }
  Status remove(const std::string& checkpoint_id) const override {
    std::error_code ec;
    if (!std::filesystem::exists(dir_, ec)) return ok();
    // Taking the writer lock proves no cppcdc uses the record; the files go while it is held.
    auto file = FileCheckpoint::open(dir_, checkpoint_id, file_mode_);
    if (!file) return fail(file.error());
    for (const auto& path : {(*file)->path(), (*file)->lock_path()}) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
        return fail(Error::checkpoint(ErrorKind::kTerminal, "cannot remove " + path.string() +
                                                                ": " + std::strerror(errno)));
      }
    }
    file->reset();
    ::rmdir(dir_.c_str());  // only when empty: other pipelines' records stay
    return ok();
  }
  Result<std::shared_ptr<Checkpoint>> open(const std::string& checkpoint_id) const override {
    auto file = FileCheckpoint::open(dir_, checkpoint_id, file_mode_);
    if (!file) return fail(file.error());
    return std::shared_ptr<Checkpoint>(std::move(*file));
  }

 private:
  std::filesystem::path dir_;
  unsigned file_mode_;
};

class ConfiguredMemoryCheckpoint final : public ConfiguredCheckpoint {
 public:
  std::string describe(const std::string&) const override {
    return "memory (not durable: a restart starts from the source's own position)";
  }
  bool durable() const override { return false; }
  Result<std::shared_ptr<Checkpoint>> open(const std::string&) const override {
    return std::shared_ptr<Checkpoint>(std::make_shared<InMemoryCheckpoint>());
  }
};

Result<std::unique_ptr<ConfiguredCheckpoint>> configure_local_fs(const Settings& settings) {
  auto dir = settings.get_path("dir");
  if (!dir) return fail(dir.error());
  if (!*dir) {
    return fail(settings.missing("dir", "when backend = \"local_fs\" (the checkpoint directory)"));
  }
  if ((*dir)->empty()) {
    return fail(settings.error("dir", "expected a directory, found an empty string"));
  }
  auto mode = detail::get_file_mode(settings, "file_mode");
  if (!mode) return fail(mode.error());
  return std::unique_ptr<ConfiguredCheckpoint>(
      std::make_unique<ConfiguredFileCheckpoint>(**dir, *mode));
}

Result<std::unique_ptr<ConfiguredCheckpoint>> configure_memory(const Settings&) {
  return std::unique_ptr<ConfiguredCheckpoint>(std::make_unique<ConfiguredMemoryCheckpoint>());
}

}  // namespace

void register_checkpoint_plugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)register_checkpoint_backend("local_fs", configure_local_fs);
    (void)register_checkpoint_backend("memory", configure_memory);
  });
}

}  // namespace cppcdc

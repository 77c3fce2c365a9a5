// The in-memory checkpoint backend.

#include "cppcdc/checkpoint.hpp"

#include <mutex>
#include <optional>

namespace cppcdc {

Result<std::optional<CheckpointRecord>> InMemoryCheckpoint::do_load() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return record_;
}

Status InMemoryCheckpoint::do_save(const CheckpointRecord& record) {
  const std::lock_guard<std::mutex> lock(mutex_);
  record_ = record;
  return ok();
}

}  // namespace cppcdc

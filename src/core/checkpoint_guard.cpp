// The invariant 6 guard that every checkpoint backend's save() runs. It parses no offset
// itself: it asks the PositionOrder registered for the source type.

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cppcdc/checkpoint.hpp"
#include "cppcdc/position.hpp"

namespace cppcdc {
namespace {

Error regression_error(const CheckpointRecord& previous, const CheckpointRecord& next,
                       std::string_view why) {
  std::string message = "refusing to replace the checkpoint of ";
  message += next.source_type;
  message += " source '";
  message += next.source_id;
  message += "' at position '";
  message += previous.offset;
  message += "' with position '";
  message += next.offset;
  message += "': ";
  message += why;
  message += "; this is a bug in the connector; the previous record is kept";
  return Error::checkpoint(ErrorKind::kTerminal, std::move(message));
}


}  // namespace

Status check_monotonic(const std::optional<CheckpointRecord>& previous,
                       const CheckpointRecord& next) {
  // Positions are only comparable within one source identity; a renamed slot or a different
  // source type starts a new, unrelated sequence.
  if (!previous || previous->source_type != next.source_type ||
      previous->source_id != next.source_id) {
    return ok();
  }
  // The source type's own order decides; a type nobody registered is not second-guessed.
  const auto order = find_position_order(next.source_type);
  if (!order) return ok();
  if (auto allowed = order->check_replace(previous->offset, next.offset); !allowed) {
    return fail(regression_error(*previous, next, allowed.error().message()));
  }
  return ok();
}

Status Checkpoint::save(const CheckpointRecord& record) {
  const std::lock_guard<std::mutex> lock(save_mutex_);
  auto previous = current_record();
  if (!previous) {
    // A record that cannot be read cannot be compared, and overwriting it hides the damage.
    return fail(std::move(previous).error().context("refusing to save the checkpoint of source '" +
                                                    record.source_id +
                                                    "' over an unreadable record"));
  }
  CPPCDC_TRY(check_monotonic(*previous, record));
  return do_save(record);
}

}  // namespace cppcdc

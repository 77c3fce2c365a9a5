// libFuzzer target for IncrementalSnapshotState::from_json, which reads the incremental
// snapshot's progress back from the checkpoint's source_state. Any input must parse or give a
// terminal checkpoint Error. A state that parses must be written by to_json() as JSON that
// parses to the same state (estimated_rows, a planner estimate, is written as a whole number of
// rows) and is written again byte for byte the same.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cppcdc/incremental_snapshot.hpp"
#include "fuzz_check.hpp"

namespace {

bool same(const cppcdc::IncrementalSnapshotTableState& a,
          const cppcdc::IncrementalSnapshotTableState& b) {
  return a.table == b.table && a.key_columns == b.key_columns && a.cursor == b.cursor &&
         a.generation == b.generation && a.chunks == b.chunks && a.rows == b.rows &&
         a.complete == b.complete;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto state = cppcdc::IncrementalSnapshotState::from_json(text);
  if (!state) {
    CPPCDC_FUZZ_CHECK(state.error().kind() == cppcdc::ErrorKind::kTerminal);
    return 0;
  }
  (void)state->is_complete();
  (void)state->rows_emitted();
  (void)state->tables_remaining();
  const std::string status = state->status();

  const std::string json = state->to_json();
  auto again = cppcdc::IncrementalSnapshotState::from_json(json);
  CPPCDC_FUZZ_CHECK(again.has_value());
  CPPCDC_FUZZ_CHECK(again->snapshot_id == state->snapshot_id);
  CPPCDC_FUZZ_CHECK(again->generation == state->generation);
  CPPCDC_FUZZ_CHECK(again->paused == state->paused);
  CPPCDC_FUZZ_CHECK(again->stopped == state->stopped);
  CPPCDC_FUZZ_CHECK(again->tables.size() == state->tables.size());
  for (std::size_t i = 0; i < state->tables.size(); ++i) {
    CPPCDC_FUZZ_CHECK(same(again->tables[i], state->tables[i]));
    const double estimate = again->tables[i].estimated_rows;
    CPPCDC_FUZZ_CHECK(std::isfinite(estimate) && estimate >= 0 && estimate == std::floor(estimate));
  }
  CPPCDC_FUZZ_CHECK(again->status() == status);
  CPPCDC_FUZZ_CHECK(again->to_json() == json);
  return 0;
}

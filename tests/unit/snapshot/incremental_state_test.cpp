// IncrementalSnapshotState's JSON form (the checkpoint's source_state). More inputs are
// exercised by tests/fuzz/incremental_state_fuzz.cpp.

#include <gtest/gtest.h>

#include <string>

#include "cppcdc/incremental_snapshot.hpp"

using namespace cppcdc;

namespace {

std::string state_with_estimate(const std::string& estimate) {
  return R"({"snapshot_id":"s-incremental-1","generation":1,"paused":false,"stopped":false,)"
         R"("tables":[{"table":"public.t","key_columns":["id"],"cursor":null,"generation":1,)"
         R"("chunks":0,"rows":0,"estimated_rows":)" +
         estimate + R"(,"complete":false}]})";
}

}  // namespace

TEST(IncrementalSnapshotState, RoundTripsThroughJson) {
  auto s = IncrementalSnapshotState::from_json(state_with_estimate("1500"));
  ASSERT_TRUE(s) << s.error().report();
  ASSERT_EQ(s->tables.size(), 1u);
  EXPECT_EQ(s->tables[0].estimated_rows, 1500);
  EXPECT_EQ(s->status(), "running");
  auto back = IncrementalSnapshotState::from_json(s->to_json());
  ASSERT_TRUE(back) << back.error().report();
  EXPECT_EQ(back->to_json(), s->to_json());
}

// Found by tests/fuzz/incremental_state_fuzz.cpp: to_json() converted the estimate to a 64-bit
// integer without a range check (undefined behaviour beyond 2^63; x86 wrote a negative count).
TEST(IncrementalSnapshotState, AnEstimateBeyondAnInt64IsWrittenAsTheLargestOne) {
  for (const std::string estimate : {"1e30", "9223372036854775808", "1e400"}) {
    SCOPED_TRACE(estimate);
    auto s = IncrementalSnapshotState::from_json(state_with_estimate(estimate));
    ASSERT_TRUE(s) << s.error().report();
    const std::string json = s->to_json();
    EXPECT_NE(json.find(R"("estimated_rows":9223372036854775807,)"), std::string::npos) << json;
    auto back = IncrementalSnapshotState::from_json(json);
    ASSERT_TRUE(back) << back.error().report();
    EXPECT_EQ(back->to_json(), json);
  }
}

TEST(IncrementalSnapshotState, AnUnknownEstimateIsWrittenAsZero) {
  for (const std::string estimate : {"-1", "0", "-1e400"}) {
    SCOPED_TRACE(estimate);
    auto s = IncrementalSnapshotState::from_json(state_with_estimate(estimate));
    ASSERT_TRUE(s) << s.error().report();
    EXPECT_NE(s->to_json().find(R"("estimated_rows":0,)"), std::string::npos) << s->to_json();
  }
}

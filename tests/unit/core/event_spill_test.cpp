// The spill file: every Event field survives the round trip, shapes come back as the same
// objects, and the file is never visible in its directory.

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "core/event_spill.hpp"

namespace fs = std::filesystem;

namespace cppcdc::detail {
namespace {

fs::path fresh_dir(const std::string& name) {
  auto dir = fs::temp_directory_path() / ("cppcdc-spill-test-" + name + "-" +
                                          std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

ColumnShape column(std::string name) {
  ColumnShape c;
  c.name = std::move(name);
  return c;
}

std::vector<Event> varied_events(const std::vector<RowShapePtr>& shapes, int n) {
  std::mt19937_64 rng(7);
  std::vector<Event> out;
  for (int i = 0; i < n; ++i) {
    Event e;
    e.op = static_cast<Operation>(rng() % 7);
    std::string big(static_cast<std::size_t>(rng() % 3000), 'x');
    Row row{ColumnValue{"id", std::to_string(i), false},
            ColumnValue{"nothing", std::nullopt, false},
            ColumnValue{"doc", R"({"n": 12345678901234567890123})", true},
            ColumnValue{"big", big, false},
            ColumnValue{"bin", std::string("\0\xff\n", 3), false}};
    switch (rng() % 3) {
      case 0:
        break;
      case 1:
        e.before = BeforeKeyOnly{Row{row[0]}};
        break;
      default:
        e.before = BeforeFull{row, {"toasted"}};
    }
    if (rng() % 2) e.after = row;
    e.source = {"postgres", "0/" + std::to_string(i), -static_cast<std::int64_t>(rng() % 1000)};
    e.ts = static_cast<std::int64_t>(rng());
    if (rng() % 2) e.schema = "public";
    e.table = "t" + std::to_string(i % 3);
    if (rng() % 2) e.primary_key = std::vector<std::string>{"id", "k2"};
    if (rng() % 4 == 0) e.snapshot = SnapshotMetadata{"snap-1", rng() % 100, true};
    if (rng() % 2) e.transaction = TransactionMetadata{rng(), rng() % 9, rng() % 9};
    e.unavailable_columns = rng() % 2 ? std::vector<std::string>{"a", "b"}
                                      : std::vector<std::string>{};
    e.shape = shapes[rng() % shapes.size()];
    if (rng() % 5 == 0) e.resume_offset = "0/" + std::to_string(i + 1);
    if (rng() % 2) e.gtid = "0-1-" + std::to_string(i);
    e.snapshot_edge = static_cast<SnapshotEdge>(rng() % 5);
    out.push_back(std::move(e));
  }
  return out;
}

TEST(EventSpill, EveryFieldSurvivesTheRoundTripAndShapesAreShared) {
  const auto dir = fresh_dir("roundtrip");
  std::vector<RowShapePtr> shapes{
      nullptr,
      std::make_shared<const RowShape>("public", "t", std::vector<ColumnShape>{column("id")},
                                       std::vector<std::string>{"id"}),
      std::make_shared<const RowShape>(std::nullopt, "m__messages",
                                       std::vector<ColumnShape>{column("prefix")},
                                       std::vector<std::string>{})};
  const auto events = varied_events(shapes, 3000);  // several MiB: more than one flush
  auto spill = EventSpill::create(dir);
  ASSERT_TRUE(spill) << spill.error().report();
  for (const auto& e : events) ASSERT_TRUE((*spill)->append(e));
  EXPECT_TRUE(fs::is_empty(dir)) << "the spill file must be unlinked at once";
  EXPECT_GT((*spill)->bytes_written(), 1u << 20);
  ASSERT_TRUE((*spill)->start_reading());
  for (std::size_t i = 0; i < events.size(); ++i) {
    Event back;
    auto got = (*spill)->next(back);
    ASSERT_TRUE(got && *got) << i;
    EXPECT_EQ(back, events[i]) << i;
    EXPECT_EQ(back.shape.get(), events[i].shape.get()) << i;
    EXPECT_EQ(back.snapshot, events[i].snapshot) << i;
    EXPECT_EQ(back.envelope_version, events[i].envelope_version);
    EXPECT_EQ(back.resume_offset, events[i].resume_offset) << i;
    EXPECT_EQ(back.gtid, events[i].gtid) << i;
    EXPECT_EQ(back.snapshot_edge, events[i].snapshot_edge) << i;
  }
  Event extra;
  auto end = (*spill)->next(extra);
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
  EXPECT_FALSE((*spill)->append(events[0])) << "appending while reading is refused";
  spill->reset();
  EXPECT_TRUE(fs::is_empty(dir));
  fs::remove_all(dir);
}

// Records of the caller's own making (a source's undecoded rows) come back byte for byte in
// their place among the events, also across the 1 MiB flushes and reads, and the count covers
// both kinds.
TEST(EventSpill, RecordsComeBackInTheirPlaceAmongTheEvents) {
  const auto dir = fresh_dir("records");
  const auto events = varied_events({nullptr}, 600);
  auto spill = EventSpill::create(dir);
  ASSERT_TRUE(spill) << spill.error().report();
  std::vector<std::string> records;
  std::mt19937 random(7);
  for (std::size_t i = 0; i < events.size(); ++i) {
    ASSERT_TRUE((*spill)->append(events[i]));
    // A head and a tail of 0 to 20,000 bytes: some records straddle the read-ahead.
    std::string head = "rec" + std::to_string(i);
    std::vector<std::uint8_t> tail(random() % 20000);
    for (auto& b : tail) b = static_cast<std::uint8_t>(random());
    ASSERT_TRUE((*spill)->append_record(head, tail));
    records.push_back(head + std::string(tail.begin(), tail.end()));
  }
  ASSERT_TRUE((*spill)->append_record(""));  // an empty record is one too
  records.emplace_back();
  EXPECT_EQ((*spill)->events_written(), events.size() * 2 + 1);
  ASSERT_TRUE((*spill)->start_reading());
  for (std::size_t i = 0; i < events.size(); ++i) {
    Event back;
    auto got = (*spill)->next(back);
    ASSERT_TRUE(got && *got) << i;
    EXPECT_EQ(back, events[i]) << i;
    auto record = (*spill)->next_record();
    ASSERT_TRUE(record && *record) << i;
    EXPECT_EQ(std::string(**record), records[i]) << i;
  }
  auto last = (*spill)->next_record();
  ASSERT_TRUE(last && *last);
  EXPECT_TRUE((*last)->empty());
  auto end = (*spill)->next_record();
  ASSERT_TRUE(end);
  EXPECT_FALSE(*end);
  EXPECT_FALSE((*spill)->append_record("late")) << "appending while reading is refused";
  fs::remove_all(dir);
}

TEST(EventSpill, AMissingDirectoryIsAnErrorNamingIt) {
  auto spill = EventSpill::create("/nonexistent/cppcdc-spill-dir");
  ASSERT_FALSE(spill);
  EXPECT_NE(spill.error().message().find("/nonexistent/cppcdc-spill-dir"), std::string::npos);
}

TEST(EventSpill, ApproximateSizeGrowsWithTheValues) {
  Event small;
  small.after = Row{ColumnValue{"id", "1", false}};
  Event large = small;
  large.after->push_back(ColumnValue{"big", std::string(10000, 'x'), false});
  EXPECT_GT(approx_event_bytes(large), approx_event_bytes(small) + 10000);
  EXPECT_GE(approx_event_bytes(small), sizeof(Event));
}

}  // namespace
}  // namespace cppcdc::detail

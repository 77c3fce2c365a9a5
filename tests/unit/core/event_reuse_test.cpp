// Reusing delivered events on the reader thread: a reset event is a default Event whatever it
// held before (nothing of its previous use leaks into the next), its after image and key names
// are handed to the caller with their memory, long strings are released, and the spare store
// stays within its bound.

#include "core/event_reuse.hpp"

#include <gtest/gtest.h>

#include "core/reader_handoff.hpp"

namespace cppcdc::detail {
namespace {

Event full_event() {
  Event e;
  e.op = Operation::kUpdate;
  e.before = BeforeFull{Row{ColumnValue{"id", "1", false}}, {"blob"}};
  e.after = Row{ColumnValue{"id", "1", false}, ColumnValue{"doc", "{\"a\":1}", true},
                ColumnValue{"note", std::string(1000, 'x'), false}};
  e.source = SourceMetadata{"mariadb", "mysql-bin.000001:12345", 17};
  e.ts = 42;
  e.schema = "db";
  e.table = "t";
  e.primary_key = std::vector<std::string>{"id"};
  e.snapshot = SnapshotMetadata{"snap", 3, true};
  e.transaction = TransactionMetadata{9, 2, 1};
  e.envelope_version = 7;
  e.unavailable_columns = {"blob"};
  e.resume_offset = "0-1-9";
  e.resume_state = std::string(5000, 's');
  e.log_position = LogPosition::from_bytes("pos").value();
  e.gtid = "0-1-9";
  e.snapshot_edge = SnapshotEdge::kLast;
  return e;
}

TEST(EventReuse, AResetEventEqualsADefaultEventAndHandsOverItsRowAndKeyNames) {
  Event e = full_event();
  ReusableParts parts;
  reset_for_reuse(e, parts);
  EXPECT_EQ(e, Event());
  EXPECT_TRUE(e.resume_state.empty());
  EXPECT_EQ(e.resume_state.capacity(), std::string().capacity());  // a long string is released
  // Outside operator==: checked one by one.
  EXPECT_TRUE(e.resume_offset.empty());
  EXPECT_TRUE(e.log_position.empty());
  EXPECT_TRUE(e.gtid.empty());
  EXPECT_EQ(e.snapshot_edge, SnapshotEdge::kNone);
  ASSERT_TRUE(parts.row.has_value());
  ASSERT_EQ(parts.row->size(), 3u);  // the columns stay, with empty strings, for the decoder
  for (const auto& c : *parts.row) {
    EXPECT_TRUE(c.name.empty());
    if (c.text) {
      EXPECT_TRUE(c.text->empty());
    }
  }
  EXPECT_EQ((*parts.row)[2].text->capacity(), std::string().capacity());
  ASSERT_TRUE(parts.names.has_value());
  EXPECT_EQ(*parts.names, std::vector<std::string>{"id"});
}

TEST(EventReuse, PartsAlreadyHeldAreKeptAndTheEventsOwnAreReleased) {
  ReusableParts parts;
  parts.row = Row{ColumnValue{"keep", "me", false}};
  parts.names = std::vector<std::string>{"k"};
  Event e = full_event();
  reset_for_reuse(e, parts);
  EXPECT_EQ(e, Event());
  EXPECT_EQ(parts.row->size(), 1u);
  EXPECT_EQ((*parts.row)[0].name, "keep");
  EXPECT_EQ(*parts.names, std::vector<std::string>{"k"});
}

TEST(EventReuse, SpareEventsHandsOutResetEventsThenNewOnesAndStaysWithinItsBound) {
  SpareEvents spares;
  std::vector<std::vector<Event>> batches(2);
  batches[0].push_back(full_event());
  batches[1].push_back(full_event());
  batches[1].push_back(full_event());
  spares.keep(batches);
  EXPECT_TRUE(batches.empty());
  EXPECT_EQ(spares.size(), 3u);
  std::vector<Event> out;
  ReusableParts parts;
  for (int i = 0; i < 4; ++i) {
    Event& e = spares.append_to(out, parts);
    EXPECT_EQ(e, Event()) << i;
    parts = ReusableParts();
  }
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(spares.size(), 0u);

  std::vector<std::vector<Event>> many(1);
  many[0].resize(SpareEvents::kMaxEvents + 10);
  many.emplace_back(5);
  spares.keep(many);
  EXPECT_EQ(spares.size(), SpareEvents::kMaxEvents);
}

TEST(EventReuse, TheHandOffGivesRecycledBatchesBackToTheReader) {
  ReaderHandoff h;
  ASSERT_TRUE(h.open({1000, std::size_t{1} << 30}));
  std::vector<Event> delivered(3);
  h.recycle(std::move(delivered));
  std::vector<std::vector<Event>> back;
  h.take_recycled(back);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].size(), 3u);
  back.clear();
  h.take_recycled(back);
  EXPECT_TRUE(back.empty());
  h.close();
}

}  // namespace
}  // namespace cppcdc::detail

// Golden envelopes: recorded pgoutput frames (tests/golden/postgres/*.frames) go through the
// decoder and the transaction assembler, and every resulting event's envelope JSON is compared
// with *.events.expected line by line. The catalog is a stand-in built from the Relation
// messages (type names for the oids these recordings use; the primary key is the id column),
// and the clock is fixed, so the output is deterministic.
// Set CPPCDC_UPDATE_GOLDEN=1 to rewrite the expected files, then review the diff.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "source/postgres/assembler.hpp"
#include "source/postgres/pgoutput.hpp"

namespace cppcdc::pg {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> from_hex(const std::string& line) {
  std::vector<std::uint8_t> out;
  for (std::size_t i = 0; i + 1 < line.size(); i += 2) {
    out.push_back(static_cast<std::uint8_t>(std::stoi(line.substr(i, 2), nullptr, 16)));
  }
  return out;
}

class StandInCatalog final : public CatalogLookup {
 public:
  Result<RelationDetails> describe(const RelationMsg& rel) override {
    static const std::map<std::uint32_t, std::string> kNames = {
        {16, "boolean"}, {20, "bigint"}, {23, "integer"}, {25, "text"},
        {114, "json"},   {3802, "jsonb"}};
    RelationDetails d;
    for (const auto& c : rel.columns) {
      std::string name;
      if (auto it = kNames.find(c.type_oid); it != kNames.end()) {
        name = it->second;
      } else if (c.type_oid == 1700 && c.type_modifier >= 4) {
        const int mod = c.type_modifier - 4;
        name = "numeric(" + std::to_string(mod >> 16) + "," + std::to_string(mod & 0xffff) + ")";
      } else if (c.type_oid == 1043 && c.type_modifier >= 4) {
        name = "character varying(" + std::to_string(c.type_modifier - 4) + ")";
      }
      d.type_names.push_back(name);
      d.not_null.push_back(c.name == "id");
      if (c.name == "id") d.primary_key.push_back("id");
    }
    return d;
  }
};

struct Replayed {
  std::vector<Event> events;
  std::vector<std::string> lines;
};

// `spill_threshold`: bytes of a transaction kept in memory before it goes to a spill file
// (nullopt: the assembler's default). `drain_piece`: events taken per drain_spilled() call.
Replayed replay(const fs::path& frames, std::optional<std::size_t> spill_threshold = std::nullopt,
                std::size_t drain_piece = 1000) {
  Replayed out;
  StandInCatalog catalog;
  TransactionAssembler assembler("postgres", [](const std::string&, const std::string&) { return true; },
                                 catalog);
  assembler.clock = [] { return std::int64_t{1700000000000}; };
  if (spill_threshold) assembler.spill_threshold_bytes = *spill_threshold;
  std::ifstream in(frames);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto bytes = from_hex(line);
    auto frame = decode_copy_frame(bytes);
    EXPECT_TRUE(frame) << frames << ":" << n;
    if (!frame) continue;
    const auto* x = std::get_if<XLogData>(&*frame);
    if (x == nullptr) continue;
    auto message = decode_pgoutput(x->payload);
    EXPECT_TRUE(message) << frames << ":" << n << ": " << message.error().report();
    if (!message) continue;
    const std::size_t before = out.events.size();
    auto st = assembler.feed(*message, x->data_start, out.events);
    EXPECT_TRUE(st) << frames << ":" << n << ": " << st.error().report();
    while (assembler.spilled_ready()) {
      const std::size_t had = out.events.size();
      auto drained = assembler.drain_spilled(out.events, drain_piece);
      EXPECT_TRUE(drained) << drained.error().report();
      if (!drained) break;
      EXPECT_LE(out.events.size() - had, drain_piece);
    }
    for (std::size_t i = before; i < out.events.size(); ++i) {
      out.lines.push_back(out.events[i].to_json());
    }
  }
  EXPECT_FALSE(assembler.in_transaction());
  return out;
}

std::vector<fs::path> frame_files() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(CPPCDC_GOLDEN_DIR) / "postgres")) {
    if (e.path().extension() == ".frames") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST(EnvelopeGolden, RecordedFramesGiveTheExpectedEnvelopes) {
  const auto files = frame_files();
  ASSERT_FALSE(files.empty());
  for (const auto& frames : files) {
    const Replayed r = replay(frames);
    fs::path expected = frames;
    expected.replace_extension(".events.expected");
    if (std::getenv("CPPCDC_UPDATE_GOLDEN") != nullptr) {
      std::ofstream out(expected);
      for (const auto& l : r.lines) out << l << "\n";
      continue;
    }
    std::ifstream in(expected);
    ASSERT_TRUE(in) << "missing " << expected << " (run with CPPCDC_UPDATE_GOLDEN=1)";
    std::vector<std::string> want;
    std::string line;
    while (std::getline(in, line)) want.push_back(line);
    ASSERT_EQ(r.lines.size(), want.size()) << expected;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(r.lines[i], want[i]) << expected << " line " << i + 1;
    }
  }
}

TEST(EnvelopeGolden, EveryTransactionCountsItsEventsExactly) {
  for (const auto& frames : frame_files()) {
    const Replayed r = replay(frames);
    std::size_t i = 0;
    while (i < r.events.size()) {
      const auto& tx = r.events[i].transaction;
      ASSERT_TRUE(tx);
      ASSERT_EQ(tx->event_index, 0u) << "line " << i + 1;
      for (std::uint64_t k = 0; k < tx->total_events; ++k) {
        const auto& e = r.events[i + k];
        ASSERT_TRUE(e.transaction);
        EXPECT_EQ(e.transaction->tx_id, tx->tx_id);
        EXPECT_EQ(e.transaction->event_index, k);
        EXPECT_EQ(e.transaction->total_events, tx->total_events);
        // Only the last event of a transaction is a resume boundary.
        EXPECT_EQ(e.resume_offset.empty(), k + 1 != tx->total_events);
        EXPECT_TRUE(e.validate()) << e.to_json();
      }
      i += tx->total_events;
    }
  }
}

TEST(EnvelopeGolden, FullIdentityCompletesUnchangedToastAndDefaultKeepsKeyOnly) {
  const Replayed r = replay(fs::path(CPPCDC_GOLDEN_DIR) / "postgres" / "basic.frames");
  bool saw_docs_update = false, saw_key_change = false;
  for (const auto& e : r.events) {
    if (e.table == "docs" && e.op == Operation::kUpdate) {
      saw_docs_update = true;
      EXPECT_TRUE(e.unavailable_columns.empty());
      ASSERT_NE(find_column(*e.after, "body"), nullptr);
      EXPECT_EQ(find_column(*e.after, "body")->text->size(), 9600u);
      EXPECT_EQ(e.primary_key, std::vector<std::string>{"id"});
      EXPECT_EQ(e.row_write().kind, RowWrite::Kind::kReplace);
    }
    if (e.table == "accounts" && e.op == Operation::kUpdate && e.before.is_key_only()) {
      saw_key_change = true;
      EXPECT_EQ(find_column(*e.before.row(), "id")->text, "1");
      EXPECT_EQ(find_column(*e.after, "id")->text, "2");
      EXPECT_TRUE(e.row_write().previous_key);
    }
  }
  EXPECT_TRUE(saw_docs_update);
  EXPECT_TRUE(saw_key_change);
}

TEST(EnvelopeGolden, SpilledTransactionsGiveTheSameEnvelopesAsInMemoryOnes) {
  for (const auto& frames : frame_files()) {
    const Replayed memory = replay(frames, std::size_t{1} << 40);
    for (std::size_t threshold : {std::size_t{0}, std::size_t{2000}}) {
      for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{1000}}) {
        const Replayed spilled = replay(frames, threshold, piece);
        ASSERT_EQ(spilled.lines, memory.lines) << frames << " threshold " << threshold
                                               << " piece " << piece;
        for (std::size_t i = 0; i < memory.events.size(); ++i) {
          EXPECT_EQ(spilled.events[i].shape->content_id(), memory.events[i].shape->content_id());
        }
      }
    }
  }
}

TEST(Assembler, ASpilledTransactionMustBeDrainedBeforeTheNextMessage) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres", [](const std::string&, const std::string&) { return true; },
                         catalog);
  a.spill_threshold_bytes = 0;
  std::vector<Event> out;
  RelationMsg rel{1, "public", "t", 'd', {{true, "id", 23, -1}}};
  ASSERT_TRUE(a.feed(rel, Lsn(0), out));
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(100), 0, 7}, Lsn(1), out));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(a.feed(InsertMsg{1, {TupleColumn{TupleColumn::Kind::kText, std::to_string(i)}}},
                       Lsn(2 + i), out));
  }
  EXPECT_EQ(a.pending(), 5u);
  ASSERT_TRUE(a.feed(CommitMsg{0, Lsn(100), Lsn(120), 0}, Lsn(100), out));
  EXPECT_TRUE(out.empty());
  ASSERT_TRUE(a.spilled_ready());
  EXPECT_FALSE(a.feed(BeginMsg{Lsn(200), 0, 8}, Lsn(150), out));
  ASSERT_TRUE(a.drain_spilled(out, 2));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].transaction->event_index, 1u);
  EXPECT_EQ(out[1].transaction->total_events, 5u);
  EXPECT_TRUE(out[1].resume_offset.empty());
  ASSERT_TRUE(a.drain_spilled(out, 100));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[4].resume_offset, "0/78");
  EXPECT_FALSE(a.spilled_ready());
  EXPECT_TRUE(a.feed(BeginMsg{Lsn(200), 0, 8}, Lsn(150), out));
}

TEST(Assembler, HandsOutEachEventsMeasureWithIt) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres", [](const std::string&, const std::string&) { return true; },
                         catalog);
  a.capture_messages = true;
  std::vector<Event> out;
  std::vector<std::size_t> bytes;
  ASSERT_TRUE(a.feed(RelationMsg{1, "public", "t", 'd', {{true, "id", 23, -1}}}, Lsn(0), out,
                     &bytes));
  // A new shape outside a transaction waits for the next Begin as a schema_change.
  RelationMsg wider{1, "public", "t", 'd', {{true, "id", 23, -1}, {false, "v", 25, -1}}};
  ASSERT_TRUE(a.feed(wider, Lsn(0), out, &bytes));
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(0xFFFFFFFFFFFFFF00), 0, 7}, Lsn(1), out, &bytes));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.feed(InsertMsg{1, {TupleColumn{TupleColumn::Kind::kText, std::to_string(i)},
                                     TupleColumn{TupleColumn::Kind::kText, std::string(40, 'x')}}},
                       Lsn(2 + i), out, &bytes));
  }
  // An end LSN long enough that the last event's resume_offset leaves the inline buffer.
  ASSERT_TRUE(a.feed(CommitMsg{0, Lsn(0xFFFFFFFFFFFFFF00), Lsn(0xFFFFFFFFFFFFFF20), 0},
                     Lsn(0xFFFFFFFFFFFFFF00), out, &bytes));
  ASSERT_TRUE(a.feed(LogicalMessageMsg{false, Lsn(0x50), "audit", "hello"}, Lsn(0x50), out,
                     &bytes));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].op, Operation::kSchemaChange);
  EXPECT_EQ(out[3].resume_offset, "FFFFFFFF/FFFFFF20");
  ASSERT_EQ(bytes.size(), out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(bytes[i], cppcdc::detail::approx_event_bytes(out[i])) << "event " << i;
  }
}

TEST(Assembler, ChangeForUnknownRelationIsAnErrorNotAGuess) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres", [](const std::string&, const std::string&) { return true; },
                         catalog);
  std::vector<Event> out;
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(100), 0, 7}, Lsn(1), out));
  InsertMsg ins;
  ins.relation_id = 42;
  auto st = a.feed(ins, Lsn(2), out);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), ErrorKind::kInvalidData);
  EXPECT_NE(st.error().message().find("42"), std::string::npos);
}

TEST(Assembler, TupleWithWrongColumnCountIsRefused) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres", [](const std::string&, const std::string&) { return true; },
                         catalog);
  std::vector<Event> out;
  RelationMsg rel;
  rel.relation_id = 1;
  rel.namespace_name = "public";
  rel.relation_name = "t";
  rel.columns = {{true, "id", 23, -1}, {false, "v", 25, -1}};
  ASSERT_TRUE(a.feed(rel, Lsn(0), out));
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(100), 0, 7}, Lsn(1), out));
  InsertMsg ins;
  ins.relation_id = 1;
  ins.new_tuple = {TupleColumn{TupleColumn::Kind::kText, "1"}};
  auto st = a.feed(ins, Lsn(2), out);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("1 columns"), std::string::npos);
}

TEST(Assembler, UncapturedTablesProduceNoEventsAndDoNotCount) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres",
                         [](const std::string&, const std::string& t) { return t == "keep"; },
                         catalog);
  std::vector<Event> out;
  RelationMsg keep{1, "public", "keep", 'd', {{true, "id", 23, -1}}};
  RelationMsg skip{2, "public", "skip", 'd', {{true, "id", 23, -1}}};
  ASSERT_TRUE(a.feed(keep, Lsn(0), out));
  ASSERT_TRUE(a.feed(skip, Lsn(0), out));
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(100), 0, 7}, Lsn(1), out));
  InsertMsg i1{1, {TupleColumn{TupleColumn::Kind::kText, "1"}}};
  InsertMsg i2{2, {TupleColumn{TupleColumn::Kind::kText, "2"}}};
  ASSERT_TRUE(a.feed(i2, Lsn(2), out));
  ASSERT_TRUE(a.feed(i1, Lsn(3), out));
  ASSERT_TRUE(out.empty());  // nothing before the commit
  ASSERT_TRUE(a.feed(CommitMsg{0, Lsn(100), Lsn(120), 0}, Lsn(100), out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].table, "keep");
  EXPECT_EQ(out[0].transaction->total_events, 1u);
  EXPECT_EQ(out[0].source.offset, "0/3");
  EXPECT_EQ(out[0].resume_offset, "0/78");
}

TEST(Assembler, LogicalMessagesFollowTheCaptureSwitchAndTheirTransaction) {
  StandInCatalog catalog;
  TransactionAssembler a("postgres", [](const std::string&, const std::string&) { return true; },
                         catalog);
  std::vector<Event> out;
  LogicalMessageMsg loose{false, Lsn(0x50), "audit", "hello"};
  ASSERT_TRUE(a.feed(loose, Lsn(0x50), out));
  EXPECT_TRUE(out.empty());  // off by default

  a.capture_messages = true;
  ASSERT_TRUE(a.feed(loose, Lsn(0x50), out));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Operation::kMessage);
  EXPECT_EQ(out[0].table, "audit__messages");
  EXPECT_FALSE(out[0].transaction);
  EXPECT_EQ(out[0].resume_offset, "0/50");
  EXPECT_TRUE(out[0].validate());
  EXPECT_EQ(out[0].row_write().kind, RowWrite::Kind::kNone);

  out.clear();
  ASSERT_TRUE(a.feed(BeginMsg{Lsn(0x100), 0, 9}, Lsn(0x60), out));
  ASSERT_TRUE(a.feed(LogicalMessageMsg{true, Lsn(0x70), "ob", std::string("\x00\xff", 2)},
                     Lsn(0x70), out));
  EXPECT_TRUE(out.empty());  // a transactional message waits for its commit
  ASSERT_TRUE(a.feed(CommitMsg{0, Lsn(0x100), Lsn(0x120), 0}, Lsn(0x100), out));
  ASSERT_EQ(out.size(), 1u);
  ASSERT_TRUE(out[0].transaction);
  EXPECT_EQ(out[0].transaction->tx_id, 9u);
  EXPECT_EQ(out[0].resume_offset, "0/120");
  EXPECT_EQ(find_column(*out[0].after, "content")->text, "\\x00ff");
  EXPECT_EQ(out[0].shape->columns()[1].data_type, "bytea");

  // A transactional message outside any transaction is a protocol surprise, not a guess.
  EXPECT_FALSE(a.feed(LogicalMessageMsg{true, Lsn(0x130), "ob", "x"}, Lsn(0x130), out));
}
}  // namespace cppcdc::pg

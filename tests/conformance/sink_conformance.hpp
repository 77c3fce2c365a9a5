#pragma once
// Conformance suite for sinks (Sink, sink.hpp): the write / flush / close contract, durability
// before acknowledgement (what flush() returned for can be read back, exactly), and failure
// classification. Every sink instantiates it with a harness; see tests/conformance/README.md.
//
//   INSTANTIATE_TYPED_TEST_SUITE_P(FileSink, SinkConformance, FileSinkHarness);
//
// A harness is a default-constructible class (one per test: a fresh, empty destination,
// removed or restored by its destructor) with:
//
//   static constexpr const char* kName;         // for messages ("file", "stdout")
//   Result<std::unique_ptr<Sink>> open();       // a sink with the JSON encoder (the default)
//                                               // writing to the destination; callable again
//                                               // for a second sink on the same destination
//   std::string delivered();                    // every byte the destination received so far
//   std::optional<Result<std::unique_ptr<Sink>>> open_failing();
//                                               // a sink whose writes fail for an I/O reason
//                                               // (no space left); nullopt: cannot (skipped)
//   std::string failing_location();             // what that failure's error must name
//   std::optional<Result<std::unique_ptr<Sink>>> open_misconfigured();
//                                               // a configuration that cannot work; nullopt:
//                                               // the sink has no such setting (skipped)
//   std::string misconfigured_location();       // what that error must name
//   static std::string unavailable();           // optional: why the destination cannot be
//                                               // reached in this run (a server that is not
//                                               // configured); non-empty skips the test
//   void interrupt();                           // optional, with resume(): the destination
//                                               // takes a few kB more at most (so a batch is
//                                               // cut part-way), then refuses, until
//   void resume();                              // it takes everything again
//   static constexpr bool kSentBytesStay;       // with interrupt(): bytes that left before a
//                                               // failure cannot be taken back (stdout), so
//                                               // whole lines of a retried batch may come twice
//
// The suite reads the destination back after flush() and compares every line with
// Event::to_json() of the event written, in order: one record per line.

#include <gtest/gtest.h>

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc::conformance {

/// Event `i` of a test stream: an insert with text that needs escaping (quotes, backslash,
/// newline, tab, non-ASCII), a NULL, a json value, and `payload` filler bytes.
inline Event sink_event(int i, std::size_t payload = 16) {
  EventBuilder builder("orders", Operation::kInsert);
  builder.schema("public")
      .source(SourceMetadata{"postgres", "0/" + std::to_string(0x1000 + i), 1700000000000 + i})
      .ts(1700000000100 + i)
      .primary_key({"id"})
      .after(Row{{"id", std::to_string(i), false},
                 {"note",
                  std::string(payload, 'x') +
                      " \"q\" \\ \n\t caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
                  false},
                 {"missing", std::nullopt, false},
                 {"doc", std::string(R"({"k":[1,2,{"z":null}]})"), true}})
      .transaction(TransactionMetadata{static_cast<std::uint64_t>(700 + i), 1, 0});
  return std::move(builder).build();
}

/// Events first .. first + count - 1.
inline std::vector<Event> sink_batch(int first, int count, std::size_t payload = 16) {
  std::vector<Event> out;
  out.reserve(static_cast<std::size_t>(count));
  for (int i = first; i < first + count; ++i) out.push_back(sink_event(i, payload));
  return out;
}

/// What the destination must hold for `events`: one to_json() line each.
inline std::string expected_lines(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events) {
    out += e.to_json();
    out += '\n';
  }
  return out;
}

/// A harness whose destination can be cut off part-way through a batch and restored.
template <typename H>
concept InterruptibleHarness = requires(H& h) {
  h.interrupt();
  h.resume();
  { H::kSentBytesStay } -> std::convertible_to<bool>;
};

template <typename Harness>
class SinkConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (requires { Harness::unavailable(); }) {
      if (const std::string why = Harness::unavailable(); !why.empty()) GTEST_SKIP() << why;
    }
    harness_.emplace();
  }
  void TearDown() override { harness_.reset(); }

  Harness& harness() { return *harness_; }

  std::unique_ptr<Sink> open() {
    auto opened = harness().open();
    if (!opened) {
      ADD_FAILURE() << Harness::kName << ": open failed: " << opened.error().report();
      return nullptr;
    }
    return std::move(*opened);
  }

  std::optional<Harness> harness_;
};

TYPED_TEST_SUITE_P(SinkConformance);

TYPED_TEST_P(SinkConformance, WriteThenFlushMakesTheBatchVisibleLineForLine) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  EXPECT_FALSE(sink->name().empty());
  const auto batch = sink_batch(1, 3);
  ASSERT_TRUE(sink->write(batch));
  const auto flushed = sink->flush();
  ASSERT_TRUE(flushed) << flushed.error().report();
  EXPECT_EQ(this->harness().delivered(), expected_lines(batch));
  ASSERT_TRUE(sink->close());
}

TYPED_TEST_P(SinkConformance, DurabilityEveryFlushedBatchIsReadBackBeforeTheNextIsWritten) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  std::vector<Event> all;
  int next = 1;
  // Small and large batches, and events larger than any stdio or page buffer.
  for (const auto& [count, payload] : std::vector<std::pair<int, std::size_t>>{
           {1, 0}, {7, 16}, {300, 200}, {2, 200'000}, {1, 5}}) {
    const auto batch = sink_batch(next, count, payload);
    next += count;
    ASSERT_TRUE(sink->write(batch));
    const auto flushed = sink->flush();
    ASSERT_TRUE(flushed) << flushed.error().report();
    all.insert(all.end(), batch.begin(), batch.end());
    // flush() returned: the consumer may acknowledge now, so every byte must be there.
    ASSERT_EQ(this->harness().delivered(), expected_lines(all)) << "after event " << next - 1;
  }
  ASSERT_TRUE(sink->close());
  EXPECT_EQ(this->harness().delivered(), expected_lines(all));
}

TYPED_TEST_P(SinkConformance, SeveralWritesBeforeOneFlushKeepTheirOrder) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  const auto first = sink_batch(1, 2);
  const auto second = sink_batch(3, 4);
  ASSERT_TRUE(sink->write(first));
  ASSERT_TRUE(sink->write(second));
  ASSERT_TRUE(sink->flush());
  std::vector<Event> all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_EQ(this->harness().delivered(), expected_lines(all));
  ASSERT_TRUE(sink->close());
}

TYPED_TEST_P(SinkConformance, AnEmptyBatchAndAnEmptyFlushAreFine) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  const std::vector<Event> none;
  const auto written = sink->write(std::span<const Event>(none));
  EXPECT_TRUE(written) << written.error().report();
  const auto flushed = sink->flush();
  EXPECT_TRUE(flushed) << flushed.error().report();
  EXPECT_EQ(this->harness().delivered(), "");
  EXPECT_TRUE(sink->flush());  // nothing written since the last flush
  const auto batch = sink_batch(1, 1);
  ASSERT_TRUE(sink->write(batch));
  ASSERT_TRUE(sink->write(std::span<const Event>(none)));
  ASSERT_TRUE(sink->flush());
  EXPECT_EQ(this->harness().delivered(), expected_lines(batch));
  ASSERT_TRUE(sink->close());
}

TYPED_TEST_P(SinkConformance, CloseFlushesAndIsIdempotent) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  const auto batch = sink_batch(1, 5);
  ASSERT_TRUE(sink->write(batch));
  const auto closed = sink->close();
  ASSERT_TRUE(closed) << closed.error().report();
  EXPECT_EQ(this->harness().delivered(), expected_lines(batch));
  const auto again = sink->close();
  EXPECT_TRUE(again) << "a second close failed: " << again.error().report();
  EXPECT_EQ(this->harness().delivered(), expected_lines(batch));
}

TYPED_TEST_P(SinkConformance, WriteAndFlushAfterCloseAreRefusedAsInvalidState) {
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  const auto batch = sink_batch(1, 2);
  ASSERT_TRUE(sink->write(batch));
  ASSERT_TRUE(sink->close());
  const auto written = sink->write(sink_batch(3, 1));
  ASSERT_FALSE(written) << "a write after close was accepted";
  EXPECT_EQ(written.error().kind(), ErrorKind::kInvalidState) << written.error().report();
  const auto flushed = sink->flush();
  ASSERT_FALSE(flushed) << "a flush after close was accepted";
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kInvalidState) << flushed.error().report();
  EXPECT_EQ(this->harness().delivered(), expected_lines(batch));
}

TYPED_TEST_P(SinkConformance, ASecondSinkOnTheSameDestinationAppends) {
  const auto first = sink_batch(1, 3);
  const auto second = sink_batch(4, 2);
  {
    auto sink = this->open();
    ASSERT_NE(sink, nullptr);
    ASSERT_TRUE(sink->write(first));
    ASSERT_TRUE(sink->close());
  }
  auto sink = this->open();
  ASSERT_NE(sink, nullptr);
  ASSERT_TRUE(sink->write(second));
  ASSERT_TRUE(sink->flush());
  std::vector<Event> all = first;
  all.insert(all.end(), second.begin(), second.end());
  EXPECT_EQ(this->harness().delivered(), expected_lines(all));
  ASSERT_TRUE(sink->close());
}

TYPED_TEST_P(SinkConformance, FailureAnIoErrorIsTransientAndNamesTheDestination) {
  auto opened = this->harness().open_failing();
  if (!opened) GTEST_SKIP() << TypeParam::kName << " cannot be made to fail on I/O";
  ASSERT_TRUE(*opened) << "opening a sink on a full device failed: " << opened->error().report();
  std::unique_ptr<Sink> sink = std::move(**opened);
  // Enough bytes that no buffer holds them all: the failure must surface by flush() at the
  // latest, never as an acknowledged batch that went nowhere.
  const auto batch = sink_batch(1, 20, 10'000);
  Status status = sink->write(batch);
  if (status) status = sink->flush();
  ASSERT_FALSE(status) << "a write to a full device was reported as delivered";
  EXPECT_EQ(status.error().kind(), ErrorKind::kTransient) << status.error().report();
  const std::string location = this->harness().failing_location();
  EXPECT_NE(status.error().report().find(location), std::string::npos)
      << "the error does not name " << location << ": " << status.error().report();
  // Retrying fails the same way, and closing does not crash.
  const auto retried = sink->flush();
  EXPECT_FALSE(retried) << "a retried flush claimed the lost bytes were delivered";
  if (!retried) {
    EXPECT_EQ(retried.error().kind(), ErrorKind::kTransient) << retried.error().report();
  }
  (void)sink->close();
}

// The runtime's retry of a failed batch: recover(), then the whole batch written again. Each
// failed attempt must leave nothing behind that the retry adds to: the batch appears once
// (a sink whose sent bytes cannot be taken back may repeat whole lines of it, never a torn
// line and never a second full copy per attempt).
TYPED_TEST_P(SinkConformance, ARetriedBatchAppearsOnceHoweverManyAttemptsFailed) {
  if constexpr (!InterruptibleHarness<TypeParam>) {
    GTEST_SKIP() << TypeParam::kName << " cannot be cut off part-way and restored";
  } else {
    auto sink = this->open();
    ASSERT_TRUE(sink);
    const auto head = sink_batch(1, 3);
    ASSERT_TRUE(sink->write(head));
    ASSERT_TRUE(sink->flush());
    const auto batch = sink_batch(10, 20, 10'000);
    this->harness().interrupt();
    for (int attempt = 1; attempt <= 3; ++attempt) {
      if (attempt > 1) {
        const auto recovered = sink->recover();
        ASSERT_TRUE(recovered) << "attempt " << attempt << ": " << recovered.error().report();
      }
      Status st = sink->write(batch);
      if (st) st = sink->flush();
      ASSERT_FALSE(st) << "attempt " << attempt << " reached a cut-off destination";
      EXPECT_EQ(st.error().kind(), ErrorKind::kTransient) << st.error().report();
    }
    this->harness().resume();
    const auto recovered = sink->recover();
    ASSERT_TRUE(recovered) << recovered.error().report();
    ASSERT_TRUE(sink->write(batch));
    const auto flushed = sink->flush();
    ASSERT_TRUE(flushed) << flushed.error().report();
    const std::string got = this->harness().delivered();
    const std::string before = expected_lines(head);
    const std::string body = expected_lines(batch);
    if (!TypeParam::kSentBytesStay) {
      EXPECT_TRUE(got == before + body)
          << "after 3 failed attempts and a retry the destination holds " << got.size()
          << " bytes, expected " << (before + body).size() << " (the batch once)";
    } else {
      ASSERT_GE(got.size(), before.size() + body.size());
      EXPECT_EQ(got.substr(0, before.size()), before);
      EXPECT_TRUE(got.substr(got.size() - body.size()) == body)
          << "the retried batch is not whole at the end";
      const std::string middle =
          got.substr(before.size(), got.size() - before.size() - body.size());
      EXPECT_TRUE(middle.empty() || (body.starts_with(middle) && middle.back() == '\n'))
          << "between the earlier batch and the retried one: " << middle.size()
          << " bytes that are not whole lines from the start of the batch (a torn line, or "
             "a copy per failed attempt)";
    }
    ASSERT_TRUE(sink->close());
  }
}

TYPED_TEST_P(SinkConformance, FailureABadConfigurationIsAConfigurationErrorNamingIt) {
  auto opened = this->harness().open_misconfigured();
  if (!opened) GTEST_SKIP() << TypeParam::kName << " has no configuration that can be wrong";
  ASSERT_FALSE(*opened) << "a sink opened with a configuration that cannot work";
  EXPECT_EQ(opened->error().kind(), ErrorKind::kConfiguration) << opened->error().report();
  const std::string location = this->harness().misconfigured_location();
  EXPECT_NE(opened->error().report().find(location), std::string::npos)
      << "the error does not name " << location << ": " << opened->error().report();
}

REGISTER_TYPED_TEST_SUITE_P(SinkConformance, WriteThenFlushMakesTheBatchVisibleLineForLine,
                            DurabilityEveryFlushedBatchIsReadBackBeforeTheNextIsWritten,
                            SeveralWritesBeforeOneFlushKeepTheirOrder,
                            AnEmptyBatchAndAnEmptyFlushAreFine, CloseFlushesAndIsIdempotent,
                            WriteAndFlushAfterCloseAreRefusedAsInvalidState,
                            ASecondSinkOnTheSameDestinationAppends,
                            FailureAnIoErrorIsTransientAndNamesTheDestination,
                            ARetriedBatchAppearsOnceHoweverManyAttemptsFailed,
                            FailureABadConfigurationIsAConfigurationErrorNamingIt);

}  // namespace cppcdc::conformance

// The router and the fanout (cppcdc/router.hpp): first match wins, unmatched events go to the
// default, every child gets its events in batch order, and a batch is acknowledged only once
// every child that received part of it flushed; a failing child leaves the batch
// unacknowledged, and it comes again only to the children that had not flushed their part
// (to every child after a restart).

#include "cppcdc/router.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cppcdc/pipeline.hpp"
#include "cppcdc/runtime.hpp"

using namespace cppcdc;

namespace {

// What every test sink did, in order: "a.write:1,2", "a.flush", "save:0/3".
struct Journal {
  std::vector<std::string> steps;
};

Event event(int id, std::string schema, std::string table) {
  Event e = EventBuilder(std::move(table), Operation::kInsert)
                .schema(std::move(schema))
                .source({"test", "0/" + std::to_string(id), 0})
                .after({ColumnValue{"id", std::to_string(id), false}})
                .build();
  e.resume_offset = "0/" + std::to_string(id);
  return e;
}

std::string id_of(const Event& e) { return (*e.after)[0].text.value_or("?"); }

class JournalSink final : public Sink {
 public:
  JournalSink(Journal& journal, std::string name) : journal_(journal), name_(std::move(name)) {}
  Status write(std::span<const Event> events) override {
    if (closed_) return fail(Error::invalid_state(name_ + " is closed"));
    std::string ids;
    for (const auto& e : events) ids += (ids.empty() ? "" : ",") + id_of(e);
    journal_.steps.push_back(name_ + ".write:" + ids);
    if (fail_writes > 0) {
      --fail_writes;
      return fail(Error::sink(ErrorKind::kTransient, name_ + " refused the write"));
    }
    return ok();
  }
  Status flush() override {
    if (closed_) return fail(Error::invalid_state(name_ + " is closed"));
    journal_.steps.push_back(name_ + ".flush");
    if (fail_flushes > 0) {
      --fail_flushes;
      return fail(Error::sink(flush_error_kind, name_ + " is unreachable"));
    }
    return ok();
  }
  Status close() override {
    if (!closed_) journal_.steps.push_back(name_ + ".close");
    closed_ = true;
    return ok();
  }
  std::string name() const override { return "journal:" + name_; }
  std::chrono::milliseconds batch_delay() const override { return delay; }

  int fail_writes = 0;
  int fail_flushes = 0;
  ErrorKind flush_error_kind = ErrorKind::kTransient;
  std::chrono::milliseconds delay{0};

 private:
  Journal& journal_;
  std::string name_;
  bool closed_ = false;
};

// Steps whose text contains one of `kinds`.
std::vector<std::string> steps_of(const Journal& j, std::initializer_list<std::string_view> kinds) {
  std::vector<std::string> out;
  for (const auto& s : j.steps) {
    for (auto k : kinds) {
      if (s.find(k) != std::string::npos) {
        out.push_back(s);
        break;
      }
    }
  }
  return out;
}

RouterChild child(Journal& j, const std::string& name, JournalSink** out = nullptr,
                  ChildBatching batching = {}) {
  auto sink = std::make_unique<JournalSink>(j, name);
  if (out != nullptr) *out = sink.get();
  return RouterChild{name, std::move(sink), batching, {}};
}

// A source replaying a fixed list of events from the checkpointed one on, `per_poll` at a time.
class ListSource final : public Source {
 public:
  ListSource(std::vector<Event> events, std::size_t per_poll = 1000)
      : events_(std::move(events)), per_poll_(per_poll) {}
  std::string type() const override { return "test"; }
  std::string source_id() const override { return "list"; }
  Status start(const std::optional<CheckpointRecord>& resume) override {
    next_ = 0;
    if (resume) {
      for (std::size_t i = 0; i < events_.size(); ++i) {
        if (events_[i].resume_offset == resume->offset) next_ = i + 1;
      }
    }
    return ok();
  }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    for (std::size_t n = 0; n < std::min(max, per_poll_) && next_ < events_.size(); ++n) {
      out.push_back(events_[next_++]);
    }
    return ok();
  }
  Status confirm(std::string_view) override { return ok(); }
  bool finished() override { return next_ == events_.size(); }
  void close() override {}

 private:
  std::vector<Event> events_;
  std::size_t per_poll_;
  std::size_t next_ = 0;
};

class JournalCheckpoint final : public Checkpoint {
 public:
  explicit JournalCheckpoint(Journal& j) : journal_(j) {}
  std::string name() const override { return "journal"; }
  std::optional<CheckpointRecord> record;

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override { return record; }
  Status do_save(const CheckpointRecord& r) override {
    journal_.steps.push_back("save:" + r.offset);
    record = r;
    return ok();
  }

 private:
  Journal& journal_;
};

std::vector<Event> mixed_batch() {
  return {event(1, "public", "invoice"), event(2, "public", "orders"),
          event(3, "billing", "ledger"), event(4, "public", "invoice_lines"),
          event(5, "public", "orders"),  event(6, "public", "invoice")};
}

}  // namespace

TEST(Router, TheFirstMatchingRouteWinsAndUnmatchedEventsGoToTheDefault) {
  Journal j;
  RouterConfig config;
  config.children.push_back(child(j, "default"));
  config.children.push_back(child(j, "billing-hook"));
  config.children.push_back(child(j, "ledger"));
  config.routes.push_back({{"public.invoice*"}, {}, {1}, ""});
  config.routes.push_back({{}, {"billing"}, {2}, ""});
  config.routes.push_back({{"*.invoice_lines"}, {}, {2}, ""});  // shadowed by the first
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  const auto batch = mixed_batch();
  ASSERT_TRUE(router->write(batch));
  ASSERT_TRUE(router->flush());
  EXPECT_EQ(steps_of(j, {".write"}),
            (std::vector<std::string>{"default.write:2,5", "billing-hook.write:1,4,6",
                                      "ledger.write:3"}));
  const auto routes = router->routes();
  ASSERT_EQ(routes.size(), 3u);
  EXPECT_EQ(routes[0].hits, 3u);
  EXPECT_EQ(routes[0].rule, "tables=public.invoice*");
  EXPECT_EQ(routes[1].hits, 1u);
  EXPECT_EQ(routes[2].hits, 0u);
  EXPECT_EQ(router->default_hits(), 2u);
  const auto unmatched = router->unmatched_routes();
  ASSERT_EQ(unmatched.size(), 1u);
  EXPECT_EQ(unmatched[0].index, 2u);
  EXPECT_EQ(unmatched[0].target, "ledger");
  EXPECT_NE(unmatched[0].consequence.find("went to the default sink"), std::string::npos)
      << unmatched[0].consequence;
  EXPECT_NE(unmatched[0].consequence.find("an earlier route"), std::string::npos);
}

// What the default logger writes while it lives.
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = spdlog::default_logger()->sinks();
    std::erase(sinks, sink_);
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  std::string text() {
    sink_->flush();
    return out_.str();
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// At stop: nothing when no event arrived in this run (every counter is zero then, which says
// nothing about the globs); else one warning naming every route that matched nothing, with
// the consequence stated once. The counters (admin snapshot, metric) list them either way.
TEST(Router, UnmatchedRoutesAreLoggedOnceAndOnlyAfterEventsArrived) {
  Journal j;
  RouterConfig config;
  config.children.push_back(child(j, "default"));
  config.children.push_back(child(j, "billing-hook"));
  config.children.push_back(child(j, "ledger"));
  config.routes.push_back({{"public.invoice*"}, {}, {1}, ""});
  config.routes.push_back({{"public.nothing"}, {}, {2}, ""});
  config.routes.push_back({{"public.nothing_either"}, {}, {2}, ""});
  config.default_targets = {0};
  config.default_name = "the default sink";
  auto router = RouterSink::create(std::move(config)).value();
  {
    CapturedLog log;
    router->warn_on_unmatched_routes();
    EXPECT_EQ(log.text(), "") << "logged before any event arrived";
    EXPECT_EQ(router->unmatched_routes().size(), 3u);
  }
  const auto batch = mixed_batch();
  ASSERT_TRUE(router->write(batch));
  ASSERT_TRUE(router->flush());
  CapturedLog log;
  router->warn_on_unmatched_routes();
  const std::string text = log.text();
  EXPECT_NE(text.find("these routes matched none of 6 events this run: route 2 "
                      "(tables=public.nothing) to \"ledger\"; route 3 "
                      "(tables=public.nothing_either) to \"ledger\"; if their globs are "
                      "misspelt, the events meant for them went to the default sink"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("went to"), text.rfind("went to"))
      << "the consequence is said once: " << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
}

TEST(Router, AChildReachedThroughSeveralTargetsGetsItsEventsInBatchOrder) {
  Journal j;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b"));
  config.routes.push_back({{"orders"}, {}, {0, 1}, "both"});  // a fanout target
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  ASSERT_TRUE(router->write(mixed_batch()));
  ASSERT_TRUE(router->flush());
  EXPECT_EQ(steps_of(j, {".write", ".flush"}),
            (std::vector<std::string>{"a.write:1,2,3,4,5,6", "b.write:2,5", "a.flush", "b.flush"}));
}

TEST(Router, OnlyChildrenThatReceivedEventsAreFlushed) {
  Journal j;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b"));
  config.routes.push_back({{"nothing_matches"}, {}, {1}, ""});
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  ASSERT_TRUE(router->write(mixed_batch()));
  ASSERT_TRUE(router->flush());
  ASSERT_TRUE(router->flush());  // nothing written since: nothing to flush
  EXPECT_EQ(steps_of(j, {".write", ".flush"}),
            (std::vector<std::string>{"a.write:1,2,3,4,5,6", "a.flush"}));
}

TEST(Router, AFailedFlushIsReturnedWithItsKindAfterTheOtherChildrenFlushed) {
  Journal j;
  JournalSink* b = nullptr;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b", &b));
  config.children.push_back(child(j, "c"));
  config.default_targets = {0, 1, 2};
  auto router = RouterSink::create(std::move(config)).value();
  b->fail_flushes = 1;
  ASSERT_TRUE(router->write(mixed_batch()));
  const auto flushed = router->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(flushed.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(flushed.error().report().find("flushing sink \"b\" (journal:b)"), std::string::npos)
      << flushed.error().report();
  EXPECT_EQ(steps_of(j, {".flush"}), (std::vector<std::string>{"a.flush", "b.flush", "c.flush"}));
  // A retry flushes only what did not flush.
  ASSERT_TRUE(router->flush());
  EXPECT_EQ(steps_of(j, {".flush"}),
            (std::vector<std::string>{"a.flush", "b.flush", "c.flush", "b.flush"}));
}

TEST(Router, AFailedWriteNamesTheChildAndKeepsTheKind) {
  Journal j;
  JournalSink* b = nullptr;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b", &b));
  config.routes.push_back({{"public.orders"}, {}, {1}, ""});
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  b->fail_writes = 1;
  const auto written = router->write(mixed_batch());
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(written.error().report().find("writing 2 events to sink \"b\""), std::string::npos)
      << written.error().report();
}

// A child's errors pass through its relabel_error before the router names the child: the
// server uses it so that a [[sinks]] entry's setting is named as that entry, not as [sink].
TEST(Router, AChildsErrorsAreRelabelledByItsOwnerBeforeTheRouterNamesTheChild) {
  Journal j;
  JournalSink* b = nullptr;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b", &b));
  int relabelled = 0;
  config.children[1].relabel_error = [&relabelled](Error e) {
    ++relabelled;
    return Error(e.kind(), e.category(), "[[sinks]] \"b\" topic: " + e.message())
        .with_condition(e.condition());
  };
  config.routes.push_back({{"public.orders"}, {}, {1}, ""});
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  b->fail_writes = 1;
  const auto written = router->write(mixed_batch());
  ASSERT_FALSE(written);
  EXPECT_EQ(relabelled, 1);
  EXPECT_EQ(written.error().kind(), ErrorKind::kTransient);
  EXPECT_NE(written.error().report().find(
                "writing 2 events to sink \"b\" (journal:b): sink error: [[sinks]] \"b\" topic: "),
            std::string::npos)
      << written.error().report();
  b->fail_flushes = 1;
  ASSERT_TRUE(router->write(mixed_batch()));
  const auto flushed = router->flush();
  ASSERT_FALSE(flushed);
  EXPECT_EQ(relabelled, 2);
  EXPECT_NE(flushed.error().report().find("[[sinks]] \"b\" topic: b is unreachable"),
            std::string::npos)
      << flushed.error().report();
}

TEST(Router, BatchingSplitsWritesAndFlushesInsideABatch) {
  Journal j;
  RouterConfig config;
  ChildBatching chunks;
  chunks.max_events = 2;
  ChildBatching interval;
  interval.flush_interval_events = 4;
  interval.max_events = 3;
  config.children.push_back(child(j, "a", nullptr, chunks));
  config.children.push_back(child(j, "b", nullptr, interval));
  config.default_targets = {0, 1};
  auto router = RouterSink::create(std::move(config)).value();
  ASSERT_TRUE(router->write(mixed_batch()));
  ASSERT_TRUE(router->flush());
  EXPECT_EQ(steps_of(j, {".write", ".flush"}),
            (std::vector<std::string>{"a.write:1,2", "a.write:3,4", "a.write:5,6",
                                      // b: 3 events, then 1 more to reach the interval of 4
                                      "b.write:1,2,3", "b.write:4", "b.flush", "b.write:5,6",
                                      // the flush before the acknowledgement
                                      "a.flush", "b.flush"}));
}

TEST(Router, TheBatchDelayIsTheShortestWishOfAnyChild) {
  Journal j;
  RouterConfig config;
  ChildBatching slow;
  slow.max_delay = std::chrono::milliseconds(500);
  JournalSink* c = nullptr;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b", nullptr, slow));
  config.children.push_back(child(j, "c", &c));
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  EXPECT_EQ(router->batch_delay(), std::chrono::milliseconds(500));
  c->delay = std::chrono::milliseconds(40);
  EXPECT_EQ(router->batch_delay(), std::chrono::milliseconds(40));
}

TEST(Router, ConfigurationMistakesAreRefused) {
  Journal j;
  const auto make = [&j](auto edit) {
    RouterConfig config;
    config.children.push_back(child(j, "a"));
    config.children.push_back(child(j, "b"));
    config.routes.push_back({{"t"}, {}, {1}, ""});
    config.default_targets = {0};
    edit(config);
    auto r = RouterSink::create(std::move(config));
    EXPECT_FALSE(r);
    if (r) return std::string();
    EXPECT_EQ(r.error().kind(), ErrorKind::kConfiguration);
    return r.error().report();
  };
  EXPECT_NE(make([](RouterConfig& c) { c.children[1].name = "a"; }).find("the name is taken"),
            std::string::npos);
  EXPECT_NE(make([](RouterConfig& c) { c.routes[0].tables.clear(); }).find("every event"),
            std::string::npos);
  EXPECT_NE(make([](RouterConfig& c) { c.routes[0].targets = {7}; }).find("names child 7"),
            std::string::npos);
  EXPECT_NE(make([](RouterConfig& c) { c.routes[0].targets.clear(); }).find("no target"),
            std::string::npos);
  EXPECT_NE(make([](RouterConfig& c) { c.default_targets.clear(); }).find("default target"),
            std::string::npos);
  EXPECT_NE(make([](RouterConfig& c) { c.children[0].sink.reset(); }).find("has no sink"),
            std::string::npos);
}

TEST(Router, CloseClosesEveryChildOnceAndRefusesLaterWrites) {
  Journal j;
  RouterConfig config;
  config.children.push_back(child(j, "a"));
  config.children.push_back(child(j, "b"));
  config.default_targets = {0};
  auto router = RouterSink::create(std::move(config)).value();
  ASSERT_TRUE(router->close());
  ASSERT_TRUE(router->close());
  EXPECT_EQ(steps_of(j, {".close"}), (std::vector<std::string>{"a.close", "b.close"}));
  const auto written = router->write(mixed_batch());
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().kind(), ErrorKind::kInvalidState);
  EXPECT_EQ(router->name(), "router(a=journal:a, b=journal:b)");
}

TEST(Fanout, EveryEventGoesToEachChild) {
  Journal j;
  std::vector<RouterChild> children;
  children.push_back(child(j, "a"));
  children.push_back(child(j, "b"));
  auto fanout = make_fanout_sink(std::move(children)).value();
  const std::vector<Event> batch = {event(1, "s", "t"), event(2, "s", "u")};
  ASSERT_TRUE(fanout->write(batch));
  ASSERT_TRUE(fanout->flush());
  EXPECT_EQ(steps_of(j, {".write", ".flush"}),
            (std::vector<std::string>{"a.write:1,2", "b.write:1,2", "a.flush", "b.flush"}));
  EXPECT_EQ(fanout->name(), "fanout(a=journal:a, b=journal:b)");
  EXPECT_FALSE(make_fanout_sink({}));
}

// Through the runtime: the acknowledgement (the checkpoint save) comes only after every child
// that received part of the batch flushed. When one child fails, nothing is acknowledged and the
// whole batch goes again to every child: at once under the circuit breaker when the failure is
// transient, after a restart when it is terminal.
TEST(RouterRuntime, ABatchIsAcknowledgedOnlyAfterEveryChildFlushedAndARetryRedoesOnlyWhatFailed) {
  Journal j;
  auto checkpoint = std::make_shared<JournalCheckpoint>(j);
  const auto run = [&](std::optional<ErrorKind> fail_b, int failures = 1) -> Result<std::uint64_t> {
    RouterConfig config;
    JournalSink* b = nullptr;
    config.children.push_back(child(j, "a"));
    config.children.push_back(child(j, "b", &b));
    config.routes.push_back({{"public.invoice*"}, {}, {1}, ""});
    config.default_targets = {0};
    b->fail_flushes = fail_b ? failures : 0;
    b->flush_error_kind = fail_b.value_or(ErrorKind::kTransient);
    PipelineConfig pc;
    pc.routes.push_back({RouterSink::create(std::move(config)).value(), nullptr});
    auto pipeline = Pipeline::create(std::move(pc)).value();
    RuntimeConfig rc;
    rc.source = std::make_unique<ListSource>(mixed_batch());
    rc.checkpoint = checkpoint;
    rc.options.max_poll_wait_ms = 1;
    rc.options.sleep = [](std::chrono::milliseconds) {};  // the breaker's back-off
    auto runtime = Runtime::create(std::move(rc)).value();
    EXPECT_TRUE(runtime->start());
    std::atomic<bool> cancel{false};
    auto delivered = runtime->run_to_completion(*pipeline, cancel);
    if (!delivered) runtime->force_stop();
    return delivered;
  };
  const std::vector<std::string> attempt = {"a.write:2,3,5", "b.write:1,4,6", "a.flush",
                                            "b.flush"};

  // Transient: the batch again, three times, but only to b (a had flushed its part and is
  // left out of every retry), and the save only after b flushed too.
  const auto retried = run(ErrorKind::kTransient, 3);
  ASSERT_TRUE(retried) << retried.error().report();
  EXPECT_EQ(*retried, 6u);
  auto expected = attempt;
  for (int i = 0; i < 3; ++i) {
    expected.push_back("b.write:1,4,6");
    expected.push_back("b.flush");
  }
  expected.push_back("save:0/6");
  EXPECT_EQ(steps_of(j, {".write", ".flush", "save:"}), expected);

  // Terminal: the run ends with nothing acknowledged, and a restart delivers it all again.
  checkpoint->record.reset();
  j.steps.clear();
  const auto failed = run(ErrorKind::kTerminal);
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().report().find("b is unreachable"), std::string::npos)
      << failed.error().report();
  EXPECT_FALSE(checkpoint->record) << "a batch was acknowledged although a child failed";
  EXPECT_EQ(steps_of(j, {".write", ".flush", "save:"}), attempt);

  j.steps.clear();
  const auto again = run(std::nullopt);
  ASSERT_TRUE(again) << again.error().report();
  EXPECT_EQ(*again, 6u);
  expected = attempt;
  expected.push_back("save:0/6");
  EXPECT_EQ(steps_of(j, {".write", ".flush", "save:"}), expected);
}

TEST(RouterRuntime, ASinkBatchDelayGathersEventsIntoOneBatch) {
  for (const bool gather : {false, true}) {
    Journal j;
    auto sink = std::make_unique<JournalSink>(j, "a");
    // Long enough that the batch fills (max_buffer_size) before it passes.
    if (gather) sink->delay = std::chrono::milliseconds(600'000);
    PipelineConfig pc;
    pc.routes.push_back({std::move(sink), nullptr});
    auto pipeline = Pipeline::create(std::move(pc)).value();
    RuntimeConfig rc;
    rc.source = std::make_unique<ListSource>(mixed_batch(), /*per_poll=*/1);
    rc.checkpoint = std::make_shared<JournalCheckpoint>(j);
    rc.options.max_poll_wait_ms = 1;
    rc.options.max_buffer_size = 3;
    auto runtime = Runtime::create(std::move(rc)).value();
    ASSERT_TRUE(runtime->start());
    std::atomic<bool> cancel{false};
    ASSERT_TRUE(runtime->run_to_completion(*pipeline, cancel));
    const auto writes = steps_of(j, {".write"});
    if (gather) {
      EXPECT_EQ(writes, (std::vector<std::string>{"a.write:1,2,3", "a.write:4,5,6"}));
    } else {
      EXPECT_EQ(writes.size(), 6u);
    }
  }
}

// The pipeline's own routes get the same treatment, and a retry writes the transforms' output
// of the failed attempt instead of running them again: a transform that hands events to a
// dead-letter file (transform_error_policy = "skip") hands each one over once per batch.
TEST(PipelineRetry, TransformsRunOnceAndRoutesThatFlushedAreLeftOut) {
  struct Counting final : Transform {
    Journal& j;
    explicit Counting(Journal& journal) : j(journal) {}
    std::string name() const override { return "counting"; }
    Status apply(std::vector<Event>& events) override {
      j.steps.push_back("transform:" + std::to_string(events.size()));
      return ok();
    }
  };
  Journal j;
  JournalSink* b = nullptr;
  auto a_sink = std::make_unique<JournalSink>(j, "a");
  auto b_sink = std::make_unique<JournalSink>(j, "b");
  b = b_sink.get();
  b->fail_flushes = 2;
  PipelineConfig pc;
  pc.transforms.push_back(std::make_unique<Counting>(j));
  pc.routes.push_back({std::move(a_sink), nullptr});
  pc.routes.push_back({std::move(b_sink), nullptr});
  auto pipeline = Pipeline::create(std::move(pc)).value();
  RuntimeConfig rc;
  rc.source = std::make_unique<ListSource>(mixed_batch());
  rc.checkpoint = std::make_shared<JournalCheckpoint>(j);
  rc.options.max_poll_wait_ms = 1;
  rc.options.sleep = [](std::chrono::milliseconds) {};
  auto runtime = Runtime::create(std::move(rc)).value();
  ASSERT_TRUE(runtime->start());
  std::atomic<bool> cancel{false};
  auto delivered = runtime->run_to_completion(*pipeline, cancel);
  ASSERT_TRUE(delivered) << delivered.error().report();
  EXPECT_EQ(steps_of(j, {"transform:", ".write", ".flush", "save:"}),
            (std::vector<std::string>{"transform:6", "a.write:1,2,3,4,5,6",
                                      "b.write:1,2,3,4,5,6", "a.flush", "b.flush",
                                      "b.write:1,2,3,4,5,6", "b.flush", "b.write:1,2,3,4,5,6",
                                      "b.flush", "save:0/6"}));
}

#pragma once
// A runtime over fakes with a fake clock, for the health and circuit breaker tests: every wait
// the runtime makes advances the clock instead of sleeping.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cppcdc/runtime.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc::test {

struct FakeClock {
  std::int64_t now = 1'700'000'000'000;
  std::int64_t slept = 0;  // total of the runtime's waits
  void advance(std::int64_t ms) { now += ms; }
};

/// Hands out `pending` events (one resumable boundary each, offsets "1", "2", ...); failures
/// are queued per call.
class FakeSource final : public Source {
 public:
  std::string type() const override { return "fake"; }
  std::string source_id() const override { return "fake-1"; }
  Status start(const std::optional<CheckpointRecord>&) override {
    ++starts;
    if (!start_errors.empty()) {
      Error e = start_errors.front();
      if (start_errors.size() > 1 || !start_errors_forever) start_errors.pop_front();
      return fail(std::move(e));
    }
    return ok();
  }
  Status poll(std::vector<Event>& out, std::size_t max, std::chrono::milliseconds) override {
    ++polls;
    if (!poll_errors.empty()) {
      Error e = poll_errors.front();
      if (poll_errors.size() > 1 || !poll_errors_forever) poll_errors.pop_front();
      return fail(std::move(e));
    }
    while (!pending.empty() && out.size() < max) {
      out.push_back(std::move(pending.front()));
      pending.pop_front();
    }
    return ok();
  }
  Status confirm(std::string_view offset) override {
    if (!confirm_errors.empty()) {
      Error e = confirm_errors.front();
      confirm_errors.pop_front();
      return fail(std::move(e));
    }
    confirmed = std::string(offset);
    return ok();
  }
  bool finished() override { return finish_when_empty && pending.empty(); }
  std::optional<std::string> idle_offset() override { return idle; }
  void close() override {}

  /// Queues `n` events of table "public.t" with offsets after the last queued one.
  void add(int n) {
    for (int i = 0; i < n; ++i) {
      Event e;
      e.schema = "public";
      e.table = "t";
      e.source.offset = std::to_string(++last_offset_);
      e.resume_offset = e.source.offset;
      e.after = Row{ColumnValue{"id", e.source.offset, false}};
      pending.push_back(std::move(e));
    }
  }

  std::deque<Event> pending;
  std::deque<Error> start_errors;
  bool start_errors_forever = false;  // the last queued error repeats
  std::deque<Error> poll_errors;
  bool poll_errors_forever = false;
  std::deque<Error> confirm_errors;
  bool finish_when_empty = false;
  std::string confirmed;
  std::optional<std::string> idle;  // what idle_offset() reports
  int starts = 0;
  int polls = 0;

 private:
  int last_offset_ = 0;
};

class MemoryCheckpoint final : public Checkpoint {
 public:
  std::string name() const override { return "test-memory"; }
  std::optional<CheckpointRecord> record;

 protected:
  Result<std::optional<CheckpointRecord>> do_load() override { return record; }
  Status do_save(const CheckpointRecord& r) override {
    if (!save_errors.empty()) {
      Error e = save_errors.front();
      if (save_errors.size() > 1 || !save_errors_forever) save_errors.pop_front();
      return fail(std::move(e));
    }
    record = r;
    return ok();
  }

 public:
  std::deque<Error> save_errors;     // the next saves fail with these, in turn
  bool save_errors_forever = false;  // the last queued error repeats
};

/// Fails the next `failures` writes with `error`, then records what it is given.
class FlakySink final : public Sink {
 public:
  Status write(std::span<const Event> events) override {
    ++writes;
    if (failures > 0 || fail_forever) {
      if (failures > 0) --failures;
      return fail(error);
    }
    for (const auto& e : events) received.push_back(e.source.offset);
    return ok();
  }
  Status flush() override { return ok(); }
  Status close() override { return ok(); }
  Status recover() override {
    ++recoveries;
    if (recover_error) return fail(*recover_error);
    return ok();
  }
  std::string name() const override { return "flaky"; }

  int failures = 0;
  int recoveries = 0;                  // recover() calls: one before each attempt after a failure
  std::optional<Error> recover_error;  // what recover() returns instead of ok
  bool fail_forever = false;
  Error error = Error::sink(ErrorKind::kTransient, "the destination is unavailable");
  int writes = 0;
  std::vector<std::string> received;
};

struct FakeRuntime {
  FakeClock clock;
  FakeSource* source = nullptr;
  std::shared_ptr<MemoryCheckpoint> checkpoint = std::make_shared<MemoryCheckpoint>();
  std::unique_ptr<Runtime> runtime;
  /// Set by a test to stop a run_to_completion from inside a wait.
  std::atomic<bool>* cancel_on_wait = nullptr;
  /// Called on every wait of the runtime (after the clock advanced), e.g. to read its snapshot
  /// while it retries.
  std::function<void()> on_wait;

  explicit FakeRuntime(RuntimeOptions options = defaults()) {
    auto src = std::make_unique<FakeSource>();
    source = src.get();
    options.clock_ms = [this] { return clock.now; };
    options.sleep = [this](std::chrono::milliseconds d) {
      clock.slept += d.count();
      clock.advance(d.count());
      if (cancel_on_wait != nullptr) cancel_on_wait->store(true);
      if (on_wait) on_wait();
    };
    RuntimeConfig config;
    config.source = std::move(src);
    config.checkpoint = checkpoint;
    config.options = std::move(options);
    runtime = Runtime::create(std::move(config)).value();
  }

  /// Small numbers that keep the arithmetic readable.
  static RuntimeOptions defaults() {
    RuntimeOptions o;
    o.max_poll_wait_ms = 500;  // stall threshold: the 30 s floor
    o.connection_retry.max_retries = std::nullopt;
    o.connection_retry.initial_delay_ms = 100;
    o.connection_retry.max_delay_ms = 400;
    o.breaker.consecutive_threshold = 4;
    o.breaker.cooldown_ms = 1'000;
    o.breaker.max_open_cycles = 2;
    return o;
  }

  HealthVerdict health() const { return runtime->admin_snapshot().health; }
};

}  // namespace cppcdc::test

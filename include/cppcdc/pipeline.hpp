#pragma once
// Pipeline: what happens to a batch between the source and the acknowledgement.
//
//   batch (as the source produced it) -> transforms, in order -> router -> sink(s)
//
// Each route names a sink and which events it takes (every event when no predicate is
// given); an event may go to several sinks, or to none. Runtime::run_to_completion(Pipeline&)
// writes a batch to every sink, flushes them all, and only then acknowledges the batch: a
// batch is checkpointed once every sink holds its events durably.
//
// For routing by table and schema globs where the first matching rule wins and the rest go to
// a default sink (the server's [[pipeline.routes]]), and for fanouts, use one route to a
// RouterSink (router.hpp).
//
// With exactly one route whose sink is a TransactionalSink (sink.hpp), that sink commits each
// batch together with the checkpoint record instead of being flushed.
//
// Ownership: the pipeline owns its transforms and sinks. Threading: one thread drives it.

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"
#include "cppcdc/transform.hpp"

namespace cppcdc {

struct PipelineRoute {
  std::unique_ptr<Sink> sink;
  /// Which events the sink takes; empty: all.
  std::function<bool(const Event&)> accepts;
};

struct PipelineConfig {
  std::vector<std::unique_ptr<Transform>> transforms;
  std::vector<PipelineRoute> routes;  ///< at least one
};

class Pipeline {
 public:
  /// Error kind configuration: no route, or a route without a sink.
  static Result<std::unique_ptr<Pipeline>> create(PipelineConfig config);
  /// A pipeline of one sink the caller keeps owning (no transforms, every event). `sink` must
  /// outlive the pipeline.
  static std::unique_ptr<Pipeline> of(Sink& sink);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  /// Transforms and routes `batch`, and writes each sink its events (a sink that gets none is
  /// not called). Errors carry the transform or sink name.
  /// A retry: when recover() was called since the last write() and `batch` is the same span
  /// again (same data and size, as Runtime delivers a batch again), the transforms are not
  /// run again (their output of the earlier attempt is written, so a dead-letter hook sees
  /// each failed event once) and, with several routes, a sink that flushed its events in the
  /// failed attempt is left out.
  Status write(std::span<const Event> batch);
  /// Flushes every sink that was written since the last flush, all of them even after one
  /// failed; the first error is returned. Errors carry the sink name.
  Status flush();
  /// Closes every sink; the first error is returned after all were closed.
  Status close();
  /// Sink::recover() of every sink that still has to deliver its part, before a batch is
  /// delivered again (see write()); the first error.
  Status recover();

  /// The shortest non-zero Sink::batch_delay() of the pipeline's sinks (0 when none asks):
  /// how long Runtime::run_to_completion gathers a batch after its first event.
  std::chrono::milliseconds batch_delay() const;

  /// The sink when the pipeline is exactly one route to a TransactionalSink; else nullptr.
  TransactionalSink* transactional_sink() const noexcept;
  /// "file:/path" or "stdout", or the names of all sinks joined by ", ".
  std::string name() const;
  /// Sink::current_problem() of every sink that reports one, each after its sink's name,
  /// joined by "; " (empty when none does). Thread-safe as Sink::current_problem() is.
  std::string current_problem() const;

 private:
  Pipeline();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cppcdc

#pragma once
// The router and the fanout: composite sinks that hand each event of a batch to one or more
// child sinks, and report a batch delivered only when every child that got part of it has
// flushed it (core concepts, "Router"; the server's `[[pipeline.routes]]` and `[[sinks]]`).
//
//   batch ──> RouterSink ──> route 1 (tables/schemas globs) ──> target: sink(s)
//                        ──> route 2 ...                    ──> ...
//                        ──> no route matched               ──> default target: sink(s)
//
// Routes are tried top to bottom and the first whose globs match the event wins; an event no
// route matches goes to the default target. A target is one or more children: a target of
// several children is a fanout (every event of it goes to each). A fanout alone is a router
// with no routes whose default target is every child (make_fanout_sink).
//
// Order: each child receives its events in the order of the batch, in one write() per
// `max_events` chunk, even when it is reached through several targets.
//
// Acknowledgement: the router is an ordinary Sink, so the runtime acknowledges a batch after
// its flush() returned, and flush() returns ok only when every child written since the last
// flush has flushed. A child that fails a write or a flush fails the router's call with the
// child's own error (its kind kept), so the whole batch stays unacknowledged. flush() flushes
// every written child even after one of them failed (the first error is returned; the others
// are logged), and the router remembers which children flushed their part: when the runtime
// calls recover() and writes the same batch again (same size, same first and last source
// offset), only the other children get it, however many retries it takes. A restart of the
// process forgets this, so after one every child gets the unacknowledged batch again
// (at-least-once).
//
// Batching per child (ChildBatching): `max_events` splits a child's part of a batch into
// several write() calls; `flush_interval_events` flushes the child after every that many
// events inside a batch (the final flush before the acknowledgement always happens);
// `max_delay` asks the runtime to keep gathering a batch for that long after its first event
// (Sink::batch_delay(); the shortest wish of any child wins, as every child shares the batch).
//
// Counters: every route counts the events it took; routes() returns them and which never
// matched, with the consequence in words. Thread safety: one thread drives the sink; routes()
// and unmatched_routes() may be called from any thread (the counters are atomics).
// Ownership: the router owns its children.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cppcdc/result.hpp"
#include "cppcdc/sink.hpp"

namespace cppcdc {

/// Per-child batching. 0 means "not set" for each field.
struct ChildBatching {
  /// Most events handed to the child in one write() call.
  std::size_t max_events = 0;
  /// The child is flushed after every this many events written to it within a batch.
  std::size_t flush_interval_events = 0;
  /// How long the runtime may gather a batch after its first event, for this child.
  std::chrono::milliseconds max_delay{0};
};

/// One child of a router.
struct RouterChild {
  std::string name;  ///< as configured ("billing-hook"); unique within the router
  std::unique_ptr<Sink> sink;
  ChildBatching batching;
  /// Applied to every error of this child before the router adds its own context ("writing N
  /// events to sink ..."): a program that configures children from a file names the child's
  /// settings as the file spells them (the sink itself only knows its own relative setting
  /// paths). Empty: errors pass unchanged. Called on the thread that drives the router.
  std::function<Error(Error)> relabel_error;
};

/// One route: the events it takes and the children they go to.
struct RouterRoute {
  /// Table globs: a glob with a dot matches "schema.table", one without the table name
  /// (`*` any run of characters, `?` one). Empty: any table.
  std::vector<std::string> tables;
  /// Schema globs. Empty: any schema. With both lists set, both must match.
  std::vector<std::string> schemas;
  /// Indexes into RouterConfig::children; at least one, each at most once.
  std::vector<std::size_t> targets;
  /// How messages name the target ("billing-hook"); defaults to the children's names.
  std::string target_name;
};

struct RouterConfig {
  std::vector<RouterChild> children;  ///< at least one
  std::vector<RouterRoute> routes;    ///< tried in order; may be empty
  /// Where events no route matched go: indexes into children, at least one.
  std::vector<std::size_t> default_targets;
  /// How messages name the default target; defaults to the children's names.
  std::string default_name = "the default sink";
};

/// A route's counter (RouterSink::routes()).
struct RouteStats {
  std::size_t index = 0;  ///< 0-based position in RouterConfig::routes
  std::string rule;       ///< "tables=public.invoice* schemas=..."
  std::string target;     ///< the target's name
  std::uint64_t hits = 0;
  bool unmatched = false;  ///< no event matched it yet
  /// While unmatched: what that means, in words.
  std::string consequence;
};

class RouterSink final : public Sink {
 public:
  /// Error kind configuration: no child, a child without a sink, two children of one name,
  /// a route without a target or with an index out of range, a route without tables and
  /// schemas (it would take every event), no default target.
  static Result<std::unique_ptr<RouterSink>> create(RouterConfig config);
  ~RouterSink() override;

  Status write(std::span<const Event> events) override;
  Status flush() override;
  /// Closes every child (each once), returning the first error after all were closed.
  Status close() override;
  /// Every child's recover(), returning the first error. Children that had taken the batch
  /// before another failed get it again with the retried batch (at least once).
  Status recover() override;
  /// "router(billing-hook=file:/x, default=stdout)".
  std::string name() const override;
  /// The shortest non-zero ChildBatching::max_delay of the children; 0 when none set one.
  std::chrono::milliseconds batch_delay() const override;
  /// Each child's current_problem() after the child's name, joined by "; ".
  std::string current_problem() const override;

  /// Every route with its counter, in order.
  std::vector<RouteStats> routes() const;
  /// Routes that never matched.
  std::vector<RouteStats> unmatched_routes() const;
  /// Events that went to the default target.
  std::uint64_t default_hits() const noexcept;
  /// Logs one warning naming every route that never matched, with the consequence stated
  /// once; nothing when no event arrived (a counter at zero then says nothing).
  void warn_on_unmatched_routes() const;

 private:
  friend Result<std::unique_ptr<Sink>> make_fanout_sink(std::vector<RouterChild> children);
  RouterSink();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Every event goes to each child; flush() succeeds only when every child flushed. Error kind
/// configuration: no child, a null child, two children of one name.
Result<std::unique_ptr<Sink>> make_fanout_sink(std::vector<RouterChild> children);

}  // namespace cppcdc

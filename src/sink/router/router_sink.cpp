// The router and the fanout (cppcdc/router.hpp): one composite sink that splits a batch by
// route, hands each child its events in batch order and flushes every child it wrote to.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <utility>

#include "cppcdc/router.hpp"
#include "cppcdc/transforms.hpp"

namespace cppcdc {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

std::string describe_rule(const RouterRoute& route) {
  std::string out;
  if (!route.tables.empty()) out += "tables=" + join(route.tables);
  if (!route.schemas.empty()) out += (out.empty() ? "" : " ") + ("schemas=" + join(route.schemas));
  return out;
}

}  // namespace

struct RouterSink::Impl {
  struct Child {
    std::string name;
    std::unique_ptr<Sink> sink;
    ChildBatching batching;
    std::function<Error(Error)> relabel_error;
    bool written = false;        // written since its last successful flush
    // Flushed its part of the batch in an attempt that failed elsewhere: when recover() is
    // followed by the same batch again, this child is left out (it holds its part already).
    bool done = false;
    bool part = false;  // given events of the current attempt (flushed or not)
    std::size_t unflushed = 0;   // events written since its last flush, for flush_interval
    std::vector<Event> scratch;  // its events when they are not one run of the batch
  };
  struct Route {
    WhenPredicate when;
    std::vector<std::size_t> targets;
    std::string rule;
    std::string target_name;
    std::atomic<std::uint64_t> hits{0};
  };

  std::string kind = "router";
  std::vector<Child> children;
  std::deque<Route> routes;  // stable: the counters are atomics
  std::vector<std::size_t> default_targets;
  std::string default_name;
  std::atomic<std::uint64_t> default_hits{0};
  std::atomic<std::uint64_t> events{0};
  // member[target][child]: whether target (a route index, or routes.size() for the default)
  // delivers to child.
  std::vector<std::vector<char>> member;
  std::vector<std::uint32_t> assignment;  // per event of the batch being written: its target
  bool closed = false;
  // The batch of the last write() (size, first and last source offset), and whether
  // recover() was called since: then a write() of that same batch is its retry.
  std::size_t batch_size = 0;
  std::string batch_first;
  std::string batch_last;
  bool retrying = false;

  // Whether `events` is the batch the last attempt wrote (remembered for the next one).
  bool same_batch_again(std::span<const Event> events) {
    const bool again = retrying && events.size() == batch_size &&
                       events.front().source.offset == batch_first &&
                       events.back().source.offset == batch_last;
    retrying = false;
    if (!again) {
      batch_size = events.size();
      batch_first = events.front().source.offset;
      batch_last = events.back().source.offset;
      for (auto& c : children) c.done = false;
    }
    return again;
  }

  std::string child_label(const Child& c) const {
    return "sink \"" + c.name + "\" (" + c.sink->name() + ")";
  }
  // A child's error as the router returns it: relabelled by its owner, then "<doing> <child>".
  Error child_error(const Child& c, const Error& e, const std::string& doing) const {
    Error out = c.relabel_error ? c.relabel_error(e) : e;
    return std::move(out).context(doing + " " + child_label(c));
  }

  Status flush_child(Child& c) {
    if (auto st = c.sink->flush(); !st) {
      return fail(child_error(c, st.error(), "flushing"));
    }
    c.written = false;
    c.unflushed = 0;
    return ok();
  }

  // Hands `events` to `c` in chunks of at most max_events, flushing after every
  // flush_interval_events.
  Status deliver(Child& c, std::span<const Event> events) {
    const std::size_t max = c.batching.max_events;
    const std::size_t interval = c.batching.flush_interval_events;
    while (!events.empty()) {
      std::size_t n = events.size();
      if (max != 0) n = std::min(n, max);
      if (interval != 0) n = std::min(n, interval - c.unflushed);
      if (auto st = c.sink->write(events.first(n)); !st) {
        return fail(child_error(c, st.error(), "writing " + std::to_string(n) + " events to"));
      }
      c.written = true;
      c.part = true;
      c.unflushed += n;
      events = events.subspan(n);
      if (interval != 0 && c.unflushed >= interval) CPPCDC_TRY(flush_child(c));
    }
    return ok();
  }
};

RouterSink::RouterSink() : impl_(std::make_unique<Impl>()) {}
RouterSink::~RouterSink() = default;

Result<std::unique_ptr<RouterSink>> RouterSink::create(RouterConfig config) {
  if (config.children.empty()) {
    return fail(Error::configuration("a router needs at least one child sink"));
  }
  std::unique_ptr<RouterSink> router(new RouterSink());
  auto& d = *router->impl_;
  const std::size_t n = config.children.size();
  for (std::size_t i = 0; i < n; ++i) {
    auto& c = config.children[i];
    const std::string label = "router child " + std::to_string(i + 1) +
                              (c.name.empty() ? std::string() : " \"" + c.name + "\"");
    if (!c.sink) return fail(Error::configuration(label + " has no sink"));
    for (std::size_t j = 0; j < i; ++j) {
      if (config.children[j].name == c.name) {
        return fail(
            Error::configuration(label + ": the name is taken by child " + std::to_string(j + 1)));
      }
    }
  }
  const auto check_targets = [n](const std::vector<std::size_t>& targets,
                                 const std::string& label) -> Status {
    if (targets.empty()) return fail(Error::configuration(label + " has no target sink"));
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i] >= n) {
        return fail(Error::configuration(label + " names child " + std::to_string(targets[i]) +
                                         " of " + std::to_string(n)));
      }
      if (std::find(targets.begin(), targets.begin() + static_cast<std::ptrdiff_t>(i),
                    targets[i]) != targets.begin() + static_cast<std::ptrdiff_t>(i)) {
        return fail(
            Error::configuration(label + " names child " + std::to_string(targets[i]) + " twice"));
      }
    }
    return ok();
  };
  const auto names_of = [&config](const std::vector<std::size_t>& targets) {
    std::vector<std::string> names;
    for (std::size_t t : targets) names.push_back(config.children[t].name);
    return join(names);
  };
  for (std::size_t i = 0; i < config.routes.size(); ++i) {
    const RouterRoute& r = config.routes[i];
    const std::string label = "route " + std::to_string(i + 1);
    if (r.tables.empty() && r.schemas.empty()) {
      return fail(Error::configuration(label + " names no tables and no schemas, so it would take "
                                               "every event; send every event to the default "
                                               "sink instead"));
    }
    CPPCDC_TRY(check_targets(r.targets, label));
    Impl::Route& route = d.routes.emplace_back();
    route.when = WhenPredicate(WhenConfig{r.tables, r.schemas, {}});
    route.targets = r.targets;
    route.rule = describe_rule(r);
    route.target_name = r.target_name.empty() ? names_of(r.targets) : r.target_name;
  }
  CPPCDC_TRY(check_targets(config.default_targets, "the default target"));
  d.default_targets = config.default_targets;
  d.default_name =
      config.default_name.empty() ? names_of(config.default_targets) : config.default_name;
  d.member.assign(d.routes.size() + 1, std::vector<char>(n, 0));
  for (std::size_t r = 0; r < d.routes.size(); ++r) {
    for (std::size_t t : d.routes[r].targets) d.member[r][t] = 1;
  }
  for (std::size_t t : d.default_targets) d.member[d.routes.size()][t] = 1;
  for (auto& c : config.children) {
    Impl::Child& child = d.children.emplace_back();
    child.name = std::move(c.name);
    child.sink = std::move(c.sink);
    child.batching = c.batching;
    child.relabel_error = std::move(c.relabel_error);
  }
  return router;
}

Status RouterSink::write(std::span<const Event> events) {
  auto& d = *impl_;
  if (d.closed) return fail(Error::invalid_state(d.kind + " sink is closed"));
  if (events.empty()) return ok();
  const bool again = d.same_batch_again(events);
  if (!again) d.events.fetch_add(events.size(), std::memory_order_relaxed);
  const auto fallback = static_cast<std::uint32_t>(d.routes.size());
  d.assignment.resize(events.size());
  std::uint64_t defaults = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::uint32_t target = fallback;
    for (std::uint32_t r = 0; r < fallback; ++r) {
      if (d.routes[r].when.matches(events[i])) {
        target = r;
        if (!again) d.routes[r].hits.fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
    if (target == fallback) ++defaults;
    d.assignment[i] = target;
  }
  if (!again) d.default_hits.fetch_add(defaults, std::memory_order_relaxed);

  for (std::size_t c = 0; c < d.children.size(); ++c) {
    Impl::Child& child = d.children[c];
    if (child.done) continue;  // it flushed its part in the attempt that failed
    // The child's events: all of the batch, one run of it (no copy), or a copy.
    std::size_t first = events.size();
    std::size_t last = 0;
    std::size_t count = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (!d.member[d.assignment[i]][c]) continue;
      first = std::min(first, i);
      last = i;
      ++count;
    }
    if (count == 0) continue;
    std::span<const Event> mine;
    if (last - first + 1 == count) {
      mine = events.subspan(first, count);
    } else {
      child.scratch.clear();
      child.scratch.reserve(count);
      for (std::size_t i = first; i <= last; ++i) {
        if (d.member[d.assignment[i]][c]) child.scratch.push_back(events[i]);
      }
      mine = child.scratch;
    }
    CPPCDC_TRY(d.deliver(child, mine));
  }
  return ok();
}

Status RouterSink::flush() {
  auto& d = *impl_;
  if (d.closed) return fail(Error::invalid_state(d.kind + " sink is closed"));
  Status first = ok();
  for (auto& child : d.children) {
    // A child that holds its part now (flushed here, or by flush_interval_events) is marked
    // done: if another child failed, the retry of the batch leaves it out.
    const bool part = std::exchange(child.part, false);
    if (!child.written) {
      child.done = child.done || part;
      child.scratch.clear();
      continue;
    }
    auto st = d.flush_child(child);
    child.scratch.clear();  // the events the child was handed live until its flush
    if (st) {
      child.done = true;
      continue;
    }
    if (first) {
      first = std::move(st);
    } else {
      spdlog::warn("{} as well: {}", d.kind, st.error().report());
    }
  }
  if (first) {
    for (auto& child : d.children) child.done = false;  // the batch is delivered
  }
  return first;
}

Status RouterSink::recover() {
  auto& d = *impl_;
  if (d.closed) return fail(Error::invalid_state(d.kind + " sink is closed"));
  d.retrying = true;
  for (auto& child : d.children) {
    if (child.done) continue;  // nothing of the failed attempt is left in it
    if (auto st = child.sink->recover(); !st) {
      return fail(d.child_error(child, st.error(), "recovering"));
    }
    // The child dropped what it held of the failed attempt; its part comes again whole.
    child.written = false;
    child.part = false;
    child.unflushed = 0;
  }
  return ok();
}

Status RouterSink::close() {
  auto& d = *impl_;
  if (d.closed) return ok();
  d.closed = true;
  Status first = ok();
  for (auto& child : d.children) {
    auto st = child.sink->close();
    if (!st && first) first = fail(d.child_error(child, st.error(), "closing"));
  }
  return first;
}

std::string RouterSink::name() const {
  std::string out = impl_->kind + "(";
  bool any = false;
  for (const auto& child : impl_->children) {
    out += (any ? ", " : "") + child.name + "=" + child.sink->name();
    any = true;
  }
  return out + ")";
}

std::chrono::milliseconds RouterSink::batch_delay() const {
  std::chrono::milliseconds shortest{0};
  const auto consider = [&shortest](std::chrono::milliseconds wish) {
    if (wish.count() > 0 && (shortest.count() == 0 || wish < shortest)) shortest = wish;
  };
  for (const auto& child : impl_->children) {
    consider(child.batching.max_delay);
    consider(child.sink->batch_delay());
  }
  return shortest;
}

std::string RouterSink::current_problem() const {
  std::string out;
  for (const auto& child : impl_->children) {
    std::string problem = child.sink->current_problem();
    if (problem.empty()) continue;
    out += (out.empty() ? "" : "; ") + child.name + ": " + problem;
  }
  return out;
}

std::vector<RouteStats> RouterSink::routes() const {
  const auto& d = *impl_;
  std::vector<RouteStats> out;
  for (std::size_t i = 0; i < d.routes.size(); ++i) {
    const auto& r = d.routes[i];
    RouteStats s;
    s.index = i;
    s.rule = r.rule;
    s.target = r.target_name;
    s.hits = r.hits.load(std::memory_order_relaxed);
    s.unmatched = s.hits == 0;
    if (s.unmatched) {
      s.consequence = "no event matched it, so \"" + r.target_name +
                      "\" received nothing through it; if its globs are misspelt, the events "
                      "meant for it went to " +
                      d.default_name;
      if (i > 0) s.consequence += ", or to an earlier route that matches them first";
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<RouteStats> RouterSink::unmatched_routes() const {
  auto all = routes();
  std::erase_if(all, [](const RouteStats& s) { return !s.unmatched; });
  return all;
}

std::uint64_t RouterSink::default_hits() const noexcept {
  return impl_->default_hits.load(std::memory_order_relaxed);
}

void RouterSink::warn_on_unmatched_routes() const {
  if (impl_->routes.empty()) return;
  const std::uint64_t events = impl_->events.load(std::memory_order_relaxed);
  // Without events a counter at zero says nothing about a rule: no line at all (the admin
  // snapshot and the metric still list the routes as unmatched).
  if (events == 0) return;
  const auto unmatched = unmatched_routes();
  if (unmatched.empty()) return;
  // One line for all of them, the consequence said once.
  std::string list;
  bool after_first = false;
  for (const auto& r : unmatched) {
    list += (list.empty() ? "" : "; ") + std::string("route ") + std::to_string(r.index + 1) +
            " (" + r.rule + ") to \"" + r.target + "\"";
    after_first = after_first || r.index > 0;
  }
  spdlog::warn(
      "{} of {} events this run: {}; if {} globs are misspelt, the events meant for "
      "{} went to {}{}",
      unmatched.size() == 1 ? "a route matched none" : "these routes matched none", events, list,
      unmatched.size() == 1 ? "its" : "their", unmatched.size() == 1 ? "it" : "them",
      impl_->default_name, after_first ? " (or to an earlier route that matches them first)" : "");
}

Result<std::unique_ptr<Sink>> make_fanout_sink(std::vector<RouterChild> children) {
  RouterConfig config;
  for (std::size_t i = 0; i < children.size(); ++i) config.default_targets.push_back(i);
  config.children = std::move(children);
  config.default_name = "every child";
  if (config.children.empty()) {
    return fail(Error::configuration("a fanout needs at least one child sink"));
  }
  auto router = RouterSink::create(std::move(config));
  if (!router) return fail(router.error());
  (*router)->impl_->kind = "fanout";
  return std::unique_ptr<Sink>(std::move(*router));
}

}  // namespace cppcdc

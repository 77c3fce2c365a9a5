// The pipeline seam: transforms, then the router, then the sinks.

#include "cppcdc/pipeline.hpp"

#include <vector>

namespace cppcdc {

struct Pipeline::Impl {
  std::vector<std::unique_ptr<Transform>> transforms;
  struct Route {
    Sink* sink = nullptr;
    std::unique_ptr<Sink> owned;
    std::function<bool(const Event&)> accepts;
    bool written = false;  // since the last flush
    bool done = false;     // flushed its part of a batch whose attempt failed elsewhere
  };
  std::vector<Route> routes;
  std::vector<Event> work;          // the transformed copy (only when there are transforms)
  std::vector<Event> routed;        // the events of one route (only when it filters)
  // The batch of the last write(), whether recover() was called since (its next write is a
  // retry), and whether `work` holds its transformed events.
  const Event* batch_data = nullptr;
  std::size_t batch_size = 0;
  bool retrying = false;
  bool work_ready = false;
};

Pipeline::Pipeline() : impl_(std::make_unique<Impl>()) {}
Pipeline::~Pipeline() = default;

Result<std::unique_ptr<Pipeline>> Pipeline::create(PipelineConfig config) {
  if (config.routes.empty()) {
    return fail(Error::configuration("a pipeline needs at least one route to a sink"));
  }
  std::unique_ptr<Pipeline> p(new Pipeline());
  for (std::size_t i = 0; i < config.transforms.size(); ++i) {
    if (!config.transforms[i]) {
      return fail(Error::configuration("pipeline transform " + std::to_string(i + 1) +
                                       " is empty"));
    }
  }
  p->impl_->transforms = std::move(config.transforms);
  for (std::size_t i = 0; i < config.routes.size(); ++i) {
    auto& r = config.routes[i];
    if (!r.sink) {
      return fail(Error::configuration("pipeline route " + std::to_string(i + 1) +
                                       " has no sink"));
    }
    Impl::Route route;
    route.sink = r.sink.get();
    route.owned = std::move(r.sink);
    route.accepts = std::move(r.accepts);
    p->impl_->routes.push_back(std::move(route));
  }
  return p;
}

std::unique_ptr<Pipeline> Pipeline::of(Sink& sink) {
  std::unique_ptr<Pipeline> p(new Pipeline());
  Impl::Route route;
  route.sink = &sink;
  p->impl_->routes.push_back(std::move(route));
  return p;
}

Status Pipeline::write(std::span<const Event> batch) {
  auto& d = *impl_;
  const bool again =
      d.retrying && batch.data() == d.batch_data && batch.size() == d.batch_size;
  d.retrying = false;
  if (!again) {
    d.batch_data = batch.data();
    d.batch_size = batch.size();
    d.work_ready = false;
    for (auto& route : d.routes) route.done = false;
  }
  std::span<const Event> events = batch;
  if (!d.transforms.empty()) {
    if (!d.work_ready) {
      // The batch itself stays as the source produced it: it is what gets acknowledged.
      d.work.assign(batch.begin(), batch.end());
      for (const auto& t : d.transforms) {
        if (auto st = t->apply(d.work); !st) {
          return fail(st.error().context("transform " + t->name()));
        }
      }
      d.work_ready = true;
    }
    events = d.work;
  }
  for (auto& route : d.routes) {
    if (route.done) continue;
    std::span<const Event> mine = events;
    if (route.accepts) {
      d.routed.clear();
      for (const Event& e : events) {
        if (route.accepts(e)) d.routed.push_back(e);
      }
      mine = d.routed;
    }
    if (mine.empty()) continue;
    if (auto st = route.sink->write(mine); !st) {
      return fail(st.error().context("writing " + std::to_string(mine.size()) + " events to " +
                                     route.sink->name()));
    }
    route.written = true;
  }
  return ok();
}

Status Pipeline::flush() {
  auto& d = *impl_;
  Status first = ok();
  // With one route a flushed sink may still have a commit ahead (a transactional sink), so
  // only several routes leave out, in a retry, the ones that hold their part.
  const bool skip_flushed = d.routes.size() > 1;
  for (auto& route : d.routes) {
    if (!route.written) continue;
    if (auto st = route.sink->flush(); !st) {
      if (first) first = fail(st.error().context("flushing " + route.sink->name()));
      continue;
    }
    route.written = false;
    route.done = skip_flushed;
  }
  if (first) {
    d.work_ready = false;  // delivered: the next write() is another batch
    for (auto& route : d.routes) route.done = false;
  }
  return first;
}

Status Pipeline::recover() {
  impl_->retrying = true;
  for (auto& route : impl_->routes) {
    if (route.done) continue;
    route.written = false;
    if (auto st = route.sink->recover(); !st) {
      return fail(st.error().context("recovering " + route.sink->name()));
    }
  }
  return ok();
}

Status Pipeline::close() {
  Status first = ok();
  for (auto& route : impl_->routes) {
    auto st = route.sink->close();
    if (!st && first) first = fail(st.error().context("closing " + route.sink->name()));
  }
  return first;
}

std::chrono::milliseconds Pipeline::batch_delay() const {
  std::chrono::milliseconds shortest{0};
  for (const auto& route : impl_->routes) {
    const auto wish = route.sink->batch_delay();
    if (wish.count() > 0 && (shortest.count() == 0 || wish < shortest)) shortest = wish;
  }
  return shortest;
}

TransactionalSink* Pipeline::transactional_sink() const noexcept {
  if (impl_->routes.size() != 1) return nullptr;
  return dynamic_cast<TransactionalSink*>(impl_->routes.front().sink);
}

std::string Pipeline::name() const {
  std::string out;
  for (const auto& route : impl_->routes) {
    if (!out.empty()) out += ", ";
    out += route.sink->name();
  }
  return out;
}

std::string Pipeline::current_problem() const {
  std::string out;
  for (const auto& route : impl_->routes) {
    std::string problem = route.sink->current_problem();
    if (problem.empty()) continue;
    if (!out.empty()) out += "; ";
    out += route.sink->name() + ": " + problem;
  }
  return out;
}

}  // namespace cppcdc

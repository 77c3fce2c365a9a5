#pragma once
// Transforms: rewrite a batch on its way from the source to the router. A transform may
// change events, drop them, or add new ones. It works on the pipeline's own copy of the batch:
// what is acknowledged and checkpointed is always the batch as the source produced it, so a
// dropped event is still acknowledged (the checkpoint moves past it) and an added one is not
// acknowledged on its own.
//
// Threading: a transform is called by the thread that runs the pipeline, one batch at a time.

#include <string>
#include <vector>

#include "cppcdc/event.hpp"
#include "cppcdc/result.hpp"

namespace cppcdc {

class Transform {
 public:
  virtual ~Transform() = default;
  /// Name for logs and errors.
  virtual std::string name() const = 0;
  /// Rewrites `events` in place (in log order on entry). An error fails the batch: nothing of
  /// it is written or acknowledged, and the runtime stops with that error.
  virtual Status apply(std::vector<Event>& events) = 0;
};

}  // namespace cppcdc

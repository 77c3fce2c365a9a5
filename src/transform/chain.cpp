// TransformChain: stages in order, the key guard, validation, the error policy and the rule
// counters.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <utility>

#include "cppcdc/transforms.hpp"
#include "transform/columns.hpp"

namespace cppcdc {
namespace {

struct Stage {
  std::string name;
  WhenPredicate when;
  bool everything = true;
  std::vector<std::unique_ptr<TransformAction>> actions;
  bool masks = false;  // has a mask action
};

// The image key values are read from: after, or the before-image for a delete (as
// Event::primary_key_values() does).
const Row* key_image(const Event& event) {
  if (event.op == Operation::kDelete) return event.before.row();
  return event.after ? &*event.after : nullptr;
}
Row* key_image(Event& event) { return const_cast<Row*>(key_image(std::as_const(event))); }

// Whether every column primary_key names is in the key image (no allocation).
bool key_resolvable(const Event& event) {
  if (!event.primary_key || event.primary_key->empty()) return false;
  const Row* row = key_image(event);
  if (row == nullptr) return false;
  return std::all_of(event.primary_key->begin(), event.primary_key->end(),
                     [row](const std::string& k) { return find_column(*row, k) != nullptr; });
}

// Copies the key columns' names and values of the key image into reused buffers (no
// allocation once their capacities have grown); false when the key does not resolve.
bool capture_key(const Event& event, std::vector<std::string>& names,
                 std::vector<std::optional<std::string>>& values, std::vector<char>& json) {
  if (!event.primary_key) return false;
  const Row* row = key_image(event);
  if (row == nullptr) return false;
  const auto& key = *event.primary_key;
  names.resize(key.size());
  values.resize(key.size());
  json.resize(key.size());
  for (std::size_t i = 0; i < key.size(); ++i) {
    const ColumnValue* column = find_column(*row, key[i]);
    if (column == nullptr) return false;
    names[i] = key[i];
    values[i] = column->text;
    json[i] = column->is_json ? 1 : 0;
  }
  return !key.empty();
}

// The first key column whose value differs from the captured one, when the key still names
// the captured columns and resolves (a key renamed, dropped or made unresolvable is judged
// by the checks after the stage). A key column whose value is the same but now JSON (an
// unwrapped member {"id":1} for the row's id "1") gets its earlier form back: keys are built
// from the form, and the row's delete carries the source's own.
// `still_captured`: whether the capture still equals the event's key (names, values and form),
// so that it serves the next action without being taken again.
std::optional<std::string> changed_key_column(Event& event, const std::vector<std::string>& names,
                                              const std::vector<std::optional<std::string>>& values,
                                              const std::vector<char>& json,
                                              bool& still_captured) {
  still_captured = false;
  if (!event.primary_key || *event.primary_key != names) return std::nullopt;
  Row* row = key_image(event);
  if (row == nullptr) return std::nullopt;
  bool all_there = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    ColumnValue* column = transform_detail::find_column_mut(*row, names[i]);
    if (column == nullptr) {
      all_there = false;
      continue;
    }
    if (column->text != values[i]) return names[i];
    column->is_json = json[i] != 0;
  }
  still_captured = all_there;
  return std::nullopt;
}

std::string where(const Event& event) {
  return "table " + transform_detail::qualified_table(event) + " (" +
         std::string(to_string(event.op)) + ", offset " +
         (event.source.offset.empty() ? std::string("unknown") : event.source.offset) + ")";
}

}  // namespace

struct TransformChain::Impl {
  std::vector<Stage> stages;
  TransformErrorPolicy policy = TransformErrorPolicy::kHalt;
  DeadLetterHook dead_letter;
  DeadLetterFlush dead_letter_flush;
  // The key guard's scratch (apply_one runs on one thread at a time).
  std::vector<std::string> key_names;
  std::vector<std::optional<std::string>> key_values;
  std::vector<char> key_json;
  std::string name;
  std::atomic<std::uint64_t> skipped{0};
  std::atomic<std::uint64_t> events{0};  // events that entered the chain
  const Stage* failed_stage = nullptr;  // the stage of the last error of apply_one

  // apply_one; with `kept` (under kSkip: the event as it entered the chain), the copy is
  // renewed before each stage that follows a masking one, so that it is what the dead-letter
  // hook receives.
  Result<ActionResult> run(Event& event, std::optional<Event>* kept);
};

TransformChain::TransformChain() : impl_(std::make_unique<Impl>()) {}
TransformChain::~TransformChain() = default;

Result<std::unique_ptr<TransformChain>> TransformChain::create(TransformChainConfig config) {
  if (config.error_policy == TransformErrorPolicy::kSkip && !config.dead_letter) {
    return fail(Error::configuration(
        "transform_error_policy \"skip\" needs a dead-letter hook to hand failed events to; "
        "without one a failed event would vanish, so it is refused (use \"halt\")"));
  }
  std::unique_ptr<TransformChain> chain(new TransformChain());
  auto& d = *chain->impl_;
  for (std::size_t i = 0; i < config.stages.size(); ++i) {
    TransformStage& s = config.stages[i];
    const std::string label = "transform stage " + std::to_string(i + 1);
    if (s.name.empty()) return fail(Error::configuration(label + ": the name is empty"));
    if (std::any_of(d.stages.begin(), d.stages.end(),
                    [&](const Stage& st) { return st.name == s.name; })) {
      return fail(Error::configuration(label + ": the name \"" + s.name +
                                       "\" is taken by an earlier stage"));
    }
    if (s.actions.empty()) {
      return fail(Error::configuration(label + " \"" + s.name + "\" has no actions"));
    }
    if (std::any_of(s.actions.begin(), s.actions.end(), [](const auto& a) { return !a; })) {
      return fail(Error::configuration(label + " \"" + s.name + "\" has an empty action"));
    }
    Stage stage;
    stage.name = std::move(s.name);
    stage.when = WhenPredicate(s.when);
    stage.everything = stage.when.matches_everything();
    stage.actions = std::move(s.actions);
    stage.masks = std::any_of(stage.actions.begin(), stage.actions.end(),
                              [](const auto& a) { return a->type() == "mask"; });
    d.stages.push_back(std::move(stage));
  }
  d.policy = config.error_policy;
  d.dead_letter = std::move(config.dead_letter);
  d.dead_letter_flush = std::move(config.dead_letter_flush);
  d.name = std::move(config.name);
  return chain;
}

std::string TransformChain::name() const { return impl_->name; }
std::size_t TransformChain::stage_count() const noexcept { return impl_->stages.size(); }
std::uint64_t TransformChain::skipped_events() const noexcept {
  return impl_->skipped.load(std::memory_order_relaxed);
}

Result<ActionResult> TransformChain::apply_one(Event& event) {
  return impl_->run(event, nullptr);
}

Result<ActionResult> TransformChain::Impl::run(Event& event, std::optional<Event>* kept) {
  // Whether the key resolves, carried from the check after a stage to the next one (a stage
  // that passed that check left it resolvable); recomputed only when it did not resolve, as a
  // stage may make it so.
  bool keyed = key_resolvable(event);
  bool masked = false;  // a stage with a mask action ran since *kept was taken
  // Whether key_names/key_values hold the event's key as it is now: taken before the first
  // guarded action and kept while the actions leave the key alone.
  bool captured = false;
  for (const Stage& stage : stages) {
    if (!stage.everything && !stage.when.matches(event)) continue;
    if (masked) {
      // What the dead-letter destination gets if a later stage fails: never the clear values
      // of columns a stage has masked already.
      *kept = event;
      masked = false;
    }
    if (!keyed) keyed = key_resolvable(event);
    for (const auto& action : stage.actions) {
      bool guard = keyed && !action->rewrites_key_values();
      if (guard && !captured) {
        captured = capture_key(event, key_names, key_values, key_json);
        guard = captured;
      }
      if (!guard) captured = false;  // an unguarded action may change the key
      auto result = action->apply(event, stage.name);
      if (!result) {
        failed_stage = &stage;
        return fail(result.error().context("transform stage \"" + stage.name + "\" (" +
                                           std::string(action->type()) + ") on " + where(event)));
      }
      if (*result == ActionResult::kDrop) return ActionResult::kDrop;
      if (guard) {
        if (auto changed = changed_key_column(event, key_names, key_values, key_json, captured)) {
          failed_stage = &stage;
          return fail(Error::invalid_data(
              "transform stage \"" + stage.name + "\" (" + std::string(action->type()) +
              ") changed the value of primary-key column \"" + *changed + "\" on " +
              where(event) +
              ": a consumer upserting by key would file this row under another row's key. Keep "
              "the key columns out of the stage (unwrap: an object member named like a key "
              "column; a mask rule on it: use hmac_sha256), or set the key to none on purpose "
              "(unwrap drop_primary_key, key_shaping set_primary_key)"));
        }
      }
    }
    if (keyed && event.primary_key && !key_resolvable(event)) {
      failed_stage = &stage;
      std::string missing;
      const Row* row = key_image(event);
      for (const auto& k : *event.primary_key) {
        if (row != nullptr && find_column(*row, k) != nullptr) continue;
        missing += (missing.empty() ? "\"" : ", \"") + k + "\"";
      }
      return fail(Error::configuration(
          "transform stage \"" + stage.name + "\" left the primary key of table " +
          transform_detail::qualified_table(event) + " naming column(s) " + missing +
          " that the event no longer carries; the event would reach the sinks without a usable "
          "key. Keep the key columns, or make the stage set the key to none on purpose (unwrap "
          "drop_primary_key, key_shaping set_primary_key)"));
    }
    if (keyed) keyed = event.primary_key.has_value();  // checked above when it is there
    if (kept != nullptr && stage.masks) masked = true;
    if (auto valid = event.validate(); !valid) {
      failed_stage = &stage;
      return fail(valid.error().context("after transform stage \"" + stage.name + "\""));
    }
  }
  return ActionResult::kKeep;
}

Status TransformChain::apply(std::vector<Event>& events) {
  auto& d = *impl_;
  const bool skip = d.policy == TransformErrorPolicy::kSkip;
  std::size_t kept = 0;
  std::size_t dead = 0;  // handed to the dead-letter hook in this call
  d.events.fetch_add(events.size(), std::memory_order_relaxed);
  for (std::size_t i = 0; i < events.size(); ++i) {
    std::optional<Event> original;
    if (skip) original = events[i];  // what the dead-letter hook receives (see Impl::run)
    d.failed_stage = nullptr;
    auto result = d.run(events[i], skip ? &original : nullptr);
    if (!result) {
      if (!skip) return fail(result.error());
      const std::string stage = d.failed_stage != nullptr ? d.failed_stage->name : d.name;
      spdlog::warn(
          "transform_error_policy = skip: dropping the event for {} and handing it to the "
          "dead-letter destination: {}",
          where(*original), result.error().report());
      if (auto st = d.dead_letter(*original, result.error(), stage); !st) {
        return fail(st.error().context("handing a failed event to the dead-letter destination"));
      }
      d.skipped.fetch_add(1, std::memory_order_relaxed);
      ++dead;
      continue;
    }
    if (*result == ActionResult::kDrop) continue;
    if (kept != i) events[kept] = std::move(events[i]);
    ++kept;
  }
  events.erase(events.begin() + static_cast<std::ptrdiff_t>(kept), events.end());
  if (dead > 0 && d.dead_letter_flush) {
    if (auto st = d.dead_letter_flush(); !st) {
      return fail(st.error().context("making " + std::to_string(dead) +
                                     " failed events durable at the dead-letter destination"));
    }
  }
  return ok();
}

std::vector<TransformRuleStats> TransformChain::rules() const {
  std::vector<TransformRuleStats> out;
  for (const Stage& stage : impl_->stages) {
    for (const auto& action : stage.actions) action->collect_rules(stage.name, out);
  }
  return out;
}

std::vector<UnmatchedRule> TransformChain::unmatched_rules() const {
  std::vector<UnmatchedRule> out;
  for (auto& r : rules()) {
    if (!r.unmatched) continue;
    out.push_back(UnmatchedRule{std::move(r.transform), std::move(r.kind), std::move(r.rule),
                                std::move(r.consequence)});
  }
  return out;
}

void TransformChain::warn_on_unmatched_rules() const {
  if (impl_->events.load(std::memory_order_relaxed) == 0) {
    // Before any traffic every rule is unmatched; saying so would only be noise.
    if (!rules().empty()) {
      spdlog::debug("no event reached the transforms, so their rule counters say nothing yet");
    }
    return;
  }
  for (const auto& r : unmatched_rules()) {
    spdlog::warn("transform stage \"{}\": {} rule \"{}\" never matched: {}", r.transform, r.kind,
                 r.rule, r.consequence);
  }
}

}  // namespace cppcdc

#pragma once
// Events and helpers for the transform tests.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cppcdc/transforms.hpp"

namespace cppcdc::test {

inline ColumnValue col(std::string name, std::string text) {
  return ColumnValue{std::move(name), std::move(text), false};
}
inline ColumnValue json_col(std::string name, std::string json) {
  return ColumnValue{std::move(name), std::move(json), true};
}
inline ColumnValue null_col(std::string name) { return ColumnValue{std::move(name), {}, false}; }

/// An insert into public.customers keyed by id.
inline Event row_event(Row after, Operation op = Operation::kInsert,
                       std::optional<std::vector<std::string>> key =
                           std::vector<std::string>{"id"}) {
  Event e;
  e.op = op;
  e.schema = "public";
  e.table = "customers";
  e.source = SourceMetadata{"postgres", "0/16B2E48", 1700000000000};
  e.ts = 1700000000123;
  e.primary_key = std::move(key);
  e.after = std::move(after);
  return e;
}

inline const std::optional<std::string>& value(const Event& e, std::string_view name) {
  static const std::optional<std::string> kAbsent = std::string("<absent>");
  const ColumnValue* c = find_column(*e.after, name);
  return c != nullptr ? c->text : kAbsent;
}

template <class T>
T must(Result<T> r) {
  if (!r) {
    ADD_FAILURE() << r.error().report();
    std::abort();
  }
  return std::move(*r);
}

/// A one-stage chain around `action`.
inline std::unique_ptr<TransformChain> chain_of(std::unique_ptr<TransformAction> action,
                                                std::string name = "stage",
                                                WhenConfig when = {}) {
  TransformChainConfig config;
  TransformStage stage;
  stage.name = std::move(name);
  stage.when = std::move(when);
  stage.actions.push_back(std::move(action));
  config.stages.push_back(std::move(stage));
  return must(TransformChain::create(std::move(config)));
}

/// Runs `event` through `chain`; the resulting events.
inline std::vector<Event> run(TransformChain& chain, Event event) {
  std::vector<Event> batch;
  batch.push_back(std::move(event));
  auto st = chain.apply(batch);
  EXPECT_TRUE(st) << (st ? "" : st.error().report());
  return batch;
}

}  // namespace cppcdc::test

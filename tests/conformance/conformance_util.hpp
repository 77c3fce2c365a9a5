#pragma once
// Small helpers the conformance suites share: a private temporary directory, a condition
// wait, and readable gtest output for checkpoint records.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include "cppcdc/checkpoint.hpp"
#include "unit/checkpoint/checkpoint_test_util.hpp"

namespace cppcdc {

/// gtest prints records field by field instead of as raw bytes.
inline void PrintTo(const CheckpointRecord& r, std::ostream* os) {
  *os << "{source_type=" << r.source_type << " source_id=" << r.source_id << " offset=" << r.offset
      << " committed_events=" << r.committed_events << " partial_tx_events=" << r.partial_tx_events
      << " partial_tx_id=" << r.partial_tx_id << " source_state=" << r.source_state
      << " saved_at_ms=" << r.saved_at_ms << "}";
}

}  // namespace cppcdc

namespace cppcdc::conformance {

using test::TempDir;

using test::read_bytes;

/// Checks `condition` every 20 ms until it holds or `timeout` passes; returns its last value.
template <typename Condition>
bool wait_until(Condition condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace cppcdc::conformance

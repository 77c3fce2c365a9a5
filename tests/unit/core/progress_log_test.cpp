// The snapshot progress line for a log (stderr not a terminal under ctest).

#include "core/progress_log.hpp"

#include <gtest/gtest.h>

#include <string>

#include "integration/log_capture.hpp"

namespace cppcdc::detail {
namespace {

// The estimate comes from the server's statistics and may be low for a table that grew; the
// final line then says so instead of "1208 rows of about 897" (ops trial 3).
TEST(ProgressLog, ATableLargerThanItsEstimateIsNotReportedAsAFractionOfIt) {
  if (::isatty(STDERR_FILENO) == 1) GTEST_SKIP() << "stderr is a terminal: the line is redrawn";
  it::LogCapture log;
  ProgressLog within("app.t", 1000, 0);
  within.update(900, true);
  ProgressLog past("app.u", 897, 0);
  past.update(1208, true);
  const std::string text = log.text();
  EXPECT_NE(text.find("snapshot of app.t: 900 rows of about 1000 read, complete"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("snapshot of app.u: 1208 rows (more than the estimated 897) read, complete"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("1208 rows of about 897"), std::string::npos) << text;
}

}  // namespace
}  // namespace cppcdc::detail

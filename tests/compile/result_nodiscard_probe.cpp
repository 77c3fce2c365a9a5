// Must NOT compile with -Werror=unused-result: a Result (or Status) that is dropped is an error
// the caller ignored. ctest runs the compiler on this file and expects it to fail.
#include "cppcdc/result.hpp"

cppcdc::Status step() { return cppcdc::ok(); }
cppcdc::Result<int> value() { return 3; }

int main() {
  step();   // dropped Status
  value();  // dropped Result<int>
  return 0;
}

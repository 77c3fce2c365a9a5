#pragma once
// A failed property in a fuzz target: says which one on stderr, then aborts, so that libFuzzer
// keeps the input and the replay test fails.

#include <cstdio>
#include <cstdlib>

#define CPPCDC_FUZZ_CHECK(condition)                                                     \
  do {                                                                                   \
    if (!(condition)) {                                                                  \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (false)

// The one checking helper of the native test programs: a check passes or
// prints "FAIL: <what>"; the program ends by printing the tally
// ("N passed, M failed", which the Python suite and CTest read) and exits
// non-zero when anything failed.
#pragma once
#include <cstdio>
#include <string>

namespace vllm_test {

inline int g_passed = 0;
inline int g_failed = 0;

inline void check(bool ok, const std::string& what) {
    if (ok) {
        ++g_passed;
    } else {
        ++g_failed;
        std::printf("FAIL: %s\n", what.c_str());
    }
}

// The end of a test program's main: prints the tally, returns its exit status.
inline int report() {
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}

}  // namespace vllm_test

using namespace vllm_test;

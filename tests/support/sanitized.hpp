#pragma once
// Whether this test binary runs under ASan/UBSan, for the tests whose bounds (memory, iterations,
// latency) are set for a release build. The build's own definition first: every sanitized build
// defines ENCBENCH_SANITIZED (cmake/EncbenchTargets.cmake), so a plain `ctest` in a sanitized build
// tree gets the sanitized bounds too; the environment variable (scripts/run-tests.sh sets it) also
// marks a run, e.g. one under valgrind.
#include <cstdlib>
#include <string_view>

namespace encbench::testing {

inline bool sanitized() {
#if defined(ENCBENCH_SANITIZED)
  return true;
#else
  const char* v = std::getenv("ENCBENCH_SANITIZED");
  return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
#endif
}

}  // namespace encbench::testing

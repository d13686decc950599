#pragma once
// The draws of tests/client/numpy_reference.py (numpy and CPython themselves), run by a python3 that
// has numpy; tests that need it skip, saying so, when none has.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {

// The reference's numbers (one a line), or nullopt when no python3 with numpy is found or it fails.
inline std::optional<std::vector<double>> numpy_reference(const std::string& args) {
  const std::string script = encbench::testing::shell_quote(tokenizer::testing::source_dir() / "tests/client/numpy_reference.py");
  for (const std::string python : {"/usr/bin/python3", "python3"}) {
    const auto probe = encbench::testing::run_command(python + " -c 'import numpy' 2>/dev/null");
    if (probe.rc != 0) continue;
    const auto run = encbench::testing::run_command(python + " " + script + " " + args);
    if (run.rc != 0) return std::nullopt;
    std::vector<double> values;
    std::istringstream lines(run.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) values.push_back(std::strtod(line.c_str(), nullptr));
    return values;
  }
  return std::nullopt;
}

inline bool numpy_available() {
  for (const std::string python : {"/usr/bin/python3", "python3"})
    if (encbench::testing::run_command(python + " -c 'import numpy' 2>/dev/null").rc == 0) return true;
  return false;
}

}  // namespace encbench::client

// A reference that must run: skipped only when there is no python3 with numpy, failed when the
// script itself fails.
#define NUMPY_OR_FAIL(var, args)                                                                  \
  if (!numpy_available()) GTEST_SKIP() << "no python3 with numpy: the reference draws need it"; \
  const auto var = numpy_reference(args);                                                         \
  ASSERT_TRUE(var.has_value()) << "tests/client/numpy_reference.py " << (args) << " failed"

#define NUMPY_OR_SKIP(var, args)                                                      \
  const auto var = numpy_reference(args);                                             \
  if (!var) GTEST_SKIP() << "no python3 with numpy: the reference draws need it"

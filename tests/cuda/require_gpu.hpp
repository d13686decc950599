// The GPU cases of tests/cuda skip, saying why, where no CUDA device answers (CI's build machines
// compile CUDA but have no GPU); on a GPU machine they run. One definition for every GPU test file.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "kernels/cuda/cuda_kernels.hpp"

#define REQUIRE_GPU()                                                                              \
  do {                                                                                             \
    std::string why_no_gpu;                                                                        \
    if (::encbench::kernels::cuda::device_count(&why_no_gpu) == 0)                                 \
      GTEST_SKIP() << "no CUDA device (" << why_no_gpu << "): GPU test skipped";                   \
  } while (0)

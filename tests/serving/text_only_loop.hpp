#pragma once
// Shared set-up of the virtual-loop tests with text-only requests (no encoder step), so each test
// file states its own expectations against the same exact step time.
#include <gtest/gtest.h>

#include <vector>

#include "harness/serving/virtual_loop.hpp"

namespace encbench::serving::text_only {

// Every engine step costs exactly 10 ms, whatever it holds.
inline StepCostModel ten_ms_steps() {
  StepCostModel cost;
  cost.base_ms = 10;
  cost.per_seq_ms = 0;
  cost.per_prefill_token_ms = 0;
  cost.per_context_token_ms = 0;
  return cost;
}

// An encoder hook that fails the test if a text-only request reaches it.
inline EncoderHook no_encoder() {
  return [](const std::vector<vision::GridTHW>&) -> EncoderStepResult {
    ADD_FAILURE() << "text-only requests ran the encoder";
    return {};
  };
}

}  // namespace encbench::serving::text_only

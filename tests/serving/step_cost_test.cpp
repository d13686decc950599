// The engine core's host work split into vLLM V1's parts, each overlapping the
// device step or not by mode. The rule (serial + max(device, overlapped)) against hand-computed
// steps, bounded both ways; the same rule on the virtual clock; the parts' reader and its errors;
// the shipped serving model's split.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/serving/serving_model.hpp"
#include "harness/serving/step_cost.hpp"
#include "harness/serving/virtual_loop.hpp"

namespace encbench::serving {
namespace {

// Device 10 ms + 0.1 ms per prefill token; parts as vLLM V1 orders them (schedule, prepare, d2h,
// update serial without async scheduling; launch and the output thread overlapped in both).
StepCostModel parted(bool async, double scale = 1.0) {
  StepCostModel c{.base_ms = 10, .per_seq_ms = 0, .per_prefill_token_ms = 0.1};
  c.async_scheduling = async;
  c.host_parts = {{"schedule", 1.0 * scale, 0.05 * scale, true, false},
                  {"prepare_inputs", 0.5 * scale, 0.02 * scale, true, false},
                  {"launch", 0.4 * scale, 0, true, true},
                  {"sampled_token_d2h", 0.3 * scale, 0, true, false},
                  {"update_from_output", 0.6 * scale, 0.01 * scale, true, false},
                  {"output_serialisation", 0.2 * scale, 0.01 * scale, true, true}};
  return c;
}

TEST(EngineHostParts, AsyncHidesEveryPartUpToTheDeviceTimeSyncAddsTheSerialOnes) {
  const StepCostModel on = parted(true), off = parted(false);
  // 20 sequences: schedule 2.0, prepare 0.9, launch 0.4, d2h 0.3, update 0.8, output 0.4 = 4.8 ms.
  EXPECT_NEAR(on.host_ms(20), 4.8, 1e-12);
  EXPECT_NEAR(off.host_ms(20), 4.8, 1e-12);  // the same work; only its placement differs
  // Device 10 + 0 = 10 ms > 4.8: async hides all of it, exactly.
  EXPECT_NEAR(on.step_ms(20, 0), 10.0, 1e-12);
  // Sync: serial 2.0 + 0.9 + 0.3 + 0.8 = 4.0; launch + output 0.8 hide under the 10 ms.
  EXPECT_NEAR(off.step_ms(20, 0), 14.0, 1e-12);
  // Host-bound under async: 200 sequences -> 3.4 + 4.6 + 2.0 + ... the whole host is the step.
  const double host200 = on.host_ms(200);
  EXPECT_NEAR(host200, 1.0 + 10 + 0.5 + 4 + 0.4 + 0.3 + 0.6 + 2 + 0.2 + 2, 1e-12);
  EXPECT_NEAR(on.step_ms(200, 0), host200, 1e-12);
  EXPECT_NEAR(off.step_ms(200, 0), (1.0 + 10 + 0.5 + 4 + 0.3 + 0.6 + 2) + std::max(10.0, 0.4 + 2.2), 1e-12);
}

TEST(EngineHostParts, AsyncIsNeverSlowerThanSyncAndNeverFasterThanEitherSide) {
  for (double scale : {0.0, 0.3, 1.0, 3.0, 10.0})
    for (std::int64_t seqs : {1, 8, 64, 256})
      for (std::int64_t prefill : {0, 100, 4000}) {
        const StepCostModel on = parted(true, scale), off = parted(false, scale);
        const double device = on.lm_device_ms(seqs, prefill, 0), host = on.host_ms(seqs);
        const double a = on.step_ms(seqs, prefill), s = off.step_ms(seqs, prefill);
        EXPECT_LE(a, s + 1e-12) << scale << " " << seqs << " " << prefill;
        EXPECT_NEAR(a, std::max(device, host), 1e-9);            // async: every part overlaps
        EXPECT_GE(s, device + off.host_split(seqs).serial_ms - 1e-9);  // sync: serial parts add
        EXPECT_LE(s, device + host + 1e-9);                       // and no more than all of it
      }
}

TEST(EngineHostParts, AnOverlappedPartIsHiddenUpToTheDeviceTimeThenAddsOneForOne) {
  StepCostModel c{.base_ms = 10, .per_seq_ms = 0, .per_prefill_token_ms = 0};
  c.async_scheduling = false;
  c.host_parts = {{"serial", 2, 0, true, false}, {"overlapped", 0, 0, true, true}};
  for (double o : {0.0, 5.0, 9.999, 10.0}) {
    c.host_parts[1].base_ms = o;
    EXPECT_DOUBLE_EQ(c.step_ms(1, 0), 12.0) << o;
  }
  for (double o : {10.5, 15.0, 40.0}) {
    c.host_parts[1].base_ms = o;
    EXPECT_DOUBLE_EQ(c.step_ms(1, 0), 2.0 + o) << o;
  }
}

// The rule on the virtual clock: each step's LM time is the rule's, to the nanosecond, and the
// async run ends earlier than the sync one by exactly the host time it hides (arrivals never leave
// the engine idle here). The device costs 10 ms a step whatever it holds, so each step's time
// follows from its sequence count alone.
TEST(EngineHostParts, TheVirtualClockChargesEachStepByTheRule) {
  std::vector<VirtualRequest> requests;
  for (int i = 0; i < 12; ++i) {
    VirtualRequest r;
    r.arrival_ns = 0;  // all at once: the plans cannot depend on the step times
    r.client_prompt_tokens = 30 + i;
    r.request.prompt_tokens = 30 + i;
    r.request.output_tokens = 5 + i % 4;
    requests.push_back(r);
  }
  const SchedulerConfig config{.max_num_seqs = 8, .max_num_batched_tokens = 64};
  const EncoderHook no_encoder = [](const std::vector<vision::GridTHW>&) -> EncoderStepResult {
    throw std::logic_error("text-only requests need no encoder");
  };
  VirtualArmOptions keep;
  keep.keep_steps = true;
  // Scale 3: the host is 9 + 0.27 ms per sequence, so steps of 4+ sequences are host-bound (> 10 ms).
  StepCostModel a = parted(true, 3.0), s = parted(false, 3.0);
  a.per_prefill_token_ms = s.per_prefill_token_ms = 0;
  const VirtualArmResult on = run_virtual_arm(requests, config, a, no_encoder, keep);
  const VirtualArmResult off = run_virtual_arm(requests, config, s, no_encoder, keep);
  ASSERT_EQ(on.steps.size(), off.steps.size());  // the same plans: only the time per step differs
  ASSERT_GT(on.steps.size(), 10u);
  Nanos hidden = 0;
  int host_bound = 0, device_bound = 0;
  for (std::size_t i = 0; i < on.steps.size(); ++i) {
    const std::int64_t seqs = on.steps[i].sequences;
    ASSERT_EQ(seqs, off.steps[i].sequences);
    const double host = a.host_ms(seqs);
    const HostSplit split = s.host_split(seqs);
    (host > 10 ? host_bound : device_bound) += 1;
    EXPECT_NEAR(static_cast<double>(on.steps[i].lm_ns), std::max(10.0, host) * 1e6, 1.0) << i;
    EXPECT_NEAR(static_cast<double>(off.steps[i].lm_ns), (split.serial_ms + std::max(10.0, split.overlapped_ms)) * 1e6,
                1.0) << i;
    hidden += off.steps[i].lm_ns - on.steps[i].lm_ns;
  }
  EXPECT_GT(host_bound, 0);
  EXPECT_GT(device_bound, 0);
  EXPECT_GT(hidden, 0);
  EXPECT_EQ(on.end_ns - on.start_ns, off.end_ns - off.start_ns - hidden);
}

// The encoder's host lead (device waiting for the eager host before the forward's first sync, plus
// the step's pre-processing) runs during the previous step's LM with async scheduling: it leaves the
// serial encoder time and competes with the overlapped parts for the device time; without async
// scheduling the whole forward stays serial.
TEST(EngineHostParts, AsyncSchedulingOverlapsTheEncodersHostLeadWithTheDeviceStep) {
  std::vector<VirtualRequest> requests;
  for (int i = 0; i < 6; ++i) {
    VirtualRequest r;
    r.client_prompt_tokens = 14;
    r.request.prompt_tokens = 30;
    r.request.image_offset = 5;
    r.request.images = {{16, vision::GridTHW{1, 8, 8}}};  // a 1x8x8 grid merged 2x2
    r.request.output_tokens = 4;
    requests.push_back(r);
  }
  const SchedulerConfig config{.max_num_seqs = 4, .max_num_batched_tokens = 64, .encoder_budget_tokens = 32};
  const EncoderHook encoder = [](const std::vector<vision::GridTHW>&) {
    EncoderStepResult r;
    r.forwards = 1;
    r.virtual_forward_ns = 8'000'000;
    r.host_lead_ns = 3'000'000;
    r.host_extra_ns = 1'000'000;
    return r;
  };
  VirtualArmOptions keep;
  keep.keep_steps = true;
  for (double scale : {1.0, 3.0}) {  // device-bound, then host-bound steps
    StepCostModel a = parted(true, scale), s = parted(false, scale);
    a.per_prefill_token_ms = s.per_prefill_token_ms = 0;
    const VirtualArmResult on = run_virtual_arm(requests, config, a, encoder, keep);
    const VirtualArmResult off = run_virtual_arm(requests, config, s, encoder, keep);
    ASSERT_EQ(on.steps.size(), off.steps.size());
    int encoder_steps = 0;
    for (std::size_t i = 0; i < on.steps.size(); ++i) {
      const std::int64_t seqs = on.steps[i].sequences;
      const bool encodes = on.steps[i].images > 0;
      encoder_steps += encodes ? 1 : 0;
      const double lead_ms = encodes ? 4.0 : 0.0;
      EXPECT_EQ(on.steps[i].encoder_ns, encodes ? 5'000'000 : 0) << i;
      EXPECT_EQ(off.steps[i].encoder_ns, encodes ? 9'000'000 : 0) << i;
      EXPECT_NEAR(static_cast<double>(on.steps[i].lm_ns), std::max(10.0, a.host_ms(seqs) + lead_ms) * 1e6, 1.0) << i;
      const HostSplit split = s.host_split(seqs);
      EXPECT_NEAR(static_cast<double>(off.steps[i].lm_ns), (split.serial_ms + std::max(10.0, split.overlapped_ms)) * 1e6,
                  1.0) << i;
      // Never slower with async scheduling; never faster than the device and the serial encoder.
      EXPECT_LE(on.steps[i].encoder_ns + on.steps[i].lm_ns, off.steps[i].encoder_ns + off.steps[i].lm_ns) << i;
      EXPECT_GE(on.steps[i].encoder_ns + on.steps[i].lm_ns, (encodes ? 5'000'000 : 0) + 10'000'000) << i;
    }
    EXPECT_GT(encoder_steps, 1) << scale;
  }
}

nlohmann::json parts_doc() {
  return nlohmann::json::parse(R"({"source": "test", "parts": {
    "a": {"base_share": 0.25, "per_seq_ms": 0.01, "overlaps_async": true, "overlaps_sync": false,
          "code": "core.py step", "source": "s"},
    "b": {"base_share": 0.75, "per_seq_ms": 0, "overlaps_async": true, "overlaps_sync": true,
          "code": "output thread", "source": "s"}}})");
}

void expect_refused(const nlohmann::json& serving, const std::string& needle) {
  try {
    (void)parse_serving_model(serving, "m.json");
    ADD_FAILURE() << "accepted; expected an error naming " << needle;
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("m.json"), std::string::npos) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(EngineHostParts, TheReaderSplitsHostBaseByShareAndRefusesBadParts) {
  nlohmann::json doc = {{"schema", "encbench-serving-model"},
                        {"host_base_ms", {{"value", 8.0}, {"source", "fit"}}},
                        {"engine_host_parts", parts_doc()}};
  const ServingModel m = parse_serving_model(doc, "m.json");
  ASSERT_EQ(m.engine_host_parts.parts.size(), 2u);
  const ServingModel back = parse_serving_model(to_json(m), "round trip");
  EXPECT_EQ(to_json(back), to_json(m));

  auto bad = doc;
  bad["engine_host_parts"]["parts"]["a"]["base_share"] = 0.3;  // sums to 1.05
  expect_refused(bad, "sum to 1.05");
  bad = doc;
  bad["engine_host_parts"]["parts"]["a"]["per_seq_ms"] = -1;
  expect_refused(bad, "parts.a.per_seq_ms must be a number in [0");
  bad = doc;
  bad["engine_host_parts"]["parts"]["a"].erase("code");
  expect_refused(bad, "parts.a.code must be a non-empty string");
  bad = doc;
  bad["engine_host_parts"]["parts"]["a"]["overlaps"] = true;
  expect_refused(bad, "unknown key \"overlaps\"");
  bad = doc;
  bad["engine_host_parts"]["parts"]["b"]["overlaps_sync"] = "yes";
  expect_refused(bad, "parts.b.overlaps_sync must be true or false");
  bad = doc;
  bad["host_per_seq_ms"] = {{"value", 0.4}, {"source", "fit"}};
  expect_refused(bad, "host_per_seq_ms must be 0 when engine_host_parts is given");
  bad = doc;
  bad["engine_host_parts"]["parts"] = nlohmann::json::object();
  expect_refused(bad, "at least one part");
}

TEST(EngineHostParts, TheShippedModelOverlapsEveryPartWithAsyncAndFourWithout) {
  const auto file = std::filesystem::path(ENCBENCH_TEST_SOURCE_DIR) / "scenarios/serving/ascend-910b-qwen3-vl-8b.json";
  const ServingModel m = load_serving_model(file);
  ASSERT_EQ(m.engine_host_parts.parts.size(), 6u);
  EXPECT_EQ(m.host_per_seq_ms.value, 0.0);
  double shares = 0;
  std::vector<std::string> serial_without_async;
  for (const EngineHostPartSpec& p : m.engine_host_parts.parts) {
    shares += p.base_share;
    EXPECT_TRUE(p.overlaps_async) << p.name;
    if (!p.overlaps_sync) serial_without_async.push_back(p.name);
    EXPECT_LE(p.per_seq_ms, 0.05) << p.name << ": vLLM's per-sequence host costs are microseconds";
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  std::sort(serial_without_async.begin(), serial_without_async.end());
  EXPECT_EQ(serial_without_async,
            (std::vector<std::string>{"prepare_inputs", "sampled_token_d2h", "schedule", "update_from_output"}));
}

}  // namespace
}  // namespace encbench::serving

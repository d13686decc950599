// libFuzzer target: the model files a user hands `encbench run` (--workload, --serving-model,
// --model-set, --device sim:FILE, --model FILE), `encode --host-model FILE` (the virtual
// clock's host costs) and the API-server stage's costs (serve --api-server-model FILE). The first byte picks the reader; the rest is the
// file (or the --model-set text). Property: a model or an InvalidInput with a message; a workload
// that was accepted samples requests inside its own bounds; a file written back reads back.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/core/error.hpp"
#include "harness/device/host_model.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/scenario/workload.hpp"
#include "harness/serving/api_server_pipeline.hpp"
#include "harness/serving/api_server_model.hpp"
#include "harness/serving/serving_model.hpp"

namespace {

// What a reader accepted and wrote back, it reads again.
template <typename Read>
void must_read_back(const Read& read) {
  try {
    read();
  } catch (const encbench::InvalidInput&) {
    __builtin_trap();
  }
}

void check_workload(const nlohmann::json& doc) {
  using namespace encbench::scenario;
  const WorkloadModel model = parse_workload(doc, "fuzz");
  for (const WorkloadRequest& r : sample_workload(model, 8, 1)) {
    if (r.text_tokens < 1 || r.image_width < 0 || r.image_height < 0) __builtin_trap();
    if (r.output_tokens < 1 || r.output_tokens > model.max_output_tokens) __builtin_trap();
  }
  // Conditioned on a sample's totals (a scenario's sample_totals): still within the bounds, the
  // text total met (8 distinct rows: no duplicates' remainder), or the totals refused.
  // Totals that vary with the input (a workload file has no key for them): 0 .. 3999 and 0 .. 1099.
  const auto size = static_cast<std::int64_t>(doc.dump().size());
  const std::int64_t text = size % 4000, output = (size * 7) % 1100;
  try {
    const auto held = sample_workload(model, 8, 1, {.requests = 8, .text_tokens = text, .output_tokens = output});
    std::int64_t text_sum = 0;
    for (const WorkloadRequest& r : held) {
      if (r.text_tokens < 1 || r.output_tokens < 1 || r.output_tokens > model.max_output_tokens) __builtin_trap();
      text_sum += r.text_tokens;
    }
    if (text > 0 && (model.dataset_rows == 0 || model.dataset_rows >= 8) && text_sum != text) __builtin_trap();
  } catch (const encbench::InvalidInput&) {
  }
  must_read_back([&] { (void)parse_workload(to_json(model), "fuzz round trip"); });
}

// A serving model that was accepted, with an LM op list, has its counts in range, its sources and
// the op sets its steps name; it reads back.
void check_serving_model(const nlohmann::json& doc) {
  using namespace encbench::serving;
  const ServingModel model = parse_serving_model(doc, "fuzz");
  if (const LmStepOps& ops = model.lm_step_ops; ops.enabled()) {
    if (ops.source.empty() || ops.host_model.empty() || ops.kernels_source.empty()) __builtin_trap();
    for (const double n : {ops.kernels_per_layer, ops.kernels_per_layer_qk_norm, ops.kernels_per_step})
      if (!(n >= 0 && n <= kMaxLmOpCount)) __builtin_trap();
    (void)ops.set(true);  // both step kinds name a set (std::out_of_range otherwise)
    (void)ops.set(false);
    for (const auto& [name, set] : ops.op_sets) {
      if (set.source.empty()) __builtin_trap();
      for (const HostOpCalls* calls : {&set.per_layer, &set.per_layer_qk_norm, &set.per_step})
        for (const auto& [op_class, n] : *calls)
          if (!(n >= 0 && n <= kMaxLmOpCount)) __builtin_trap();
    }
  }
  must_read_back([&] { (void)parse_serving_model(to_json(model), "fuzz round trip"); });
}

// A host model that was accepted has every class, a cost in range and a source; it reads back.
void check_host_model(const nlohmann::json& doc) {
  using namespace encbench::device;
  const HostModel model = parse_host_model(doc, "fuzz");
  for (HostOpClass c : kHostOpClasses) {
    const HostOpCost& cost = model.costs[static_cast<std::size_t>(c)];
    if (cost.ns < 0 || cost.ns > kMaxHostOpCostNs || cost.source.empty()) __builtin_trap();
  }
  must_read_back([&] { (void)parse_host_model(to_json(model), "fuzz round trip"); });
}

// A sim profile that was accepted has every op efficiency in (0, 1] with its ops and source, and
// reads back with the same efficiencies (issue 35's cost file).
void check_sim_profile(const nlohmann::json& doc) {
  using namespace encbench::device;
  const SimProfile profile = parse_sim_profile(doc, "fuzz");
  for (const OpEfficiency& e : profile.op_efficiency)
    if (!(e.fraction.value > 0 && e.fraction.value <= 1) || e.ops.empty() || e.fraction.source.empty()) __builtin_trap();
  must_read_back([&] {
    const SimProfile back = parse_sim_profile(to_json(profile), "fuzz round trip");
    if (back.op_efficiency.size() != profile.op_efficiency.size()) __builtin_trap();
  });
}

// An API-server model that was accepted has costs in range, each with a source, and a cost per
// request that grows with pixels; it reads back.
void check_api_server_model(const nlohmann::json& doc) {
  using namespace encbench::serving;
  const ApiServerModel model = parse_api_server_model(doc, "fuzz");
  for (const ApiServerCoefficient* c : {&model.api_server_count, &model.request_ms, &model.decode_ns_per_pixel,
                                        &model.process_ns_per_pixel, &model.prompt_us_per_token,
                                        &model.hash_ns_per_pixel, &model.media_loading_threads,
                                        &model.processor_cache_gib, &model.processor_bytes_per_element})
    if (!(c->value >= 0) || c->source.empty()) __builtin_trap();
  if (model.processes() < 0 || model.processes() > kMaxApiServers) __builtin_trap();
  // A processor curve that was accepted never falls with size, nor does its cost per image.
  const auto& points = model.process_ms_by_pixels.points;
  for (std::size_t i = 1; i < points.size(); ++i)
    if (!(points[i].first > points[i - 1].first && points[i].second >= points[i - 1].second)) __builtin_trap();
  if (model.process_ms_by_pixels.enabled() && model.process_ns_per_pixel.value != 0) __builtin_trap();
  if (model.process_cost_ns(1 << 22) < model.process_cost_ns(1 << 16)) __builtin_trap();
  if (model.request_cost_ns(1 << 20, 100) < model.request_cost_ns(0, 100)) __builtin_trap();
  if (model.serial_cost_ns({.cached_pixels = 1 << 20, .prompt_tokens = 100}) >
      model.serial_cost_ns({.processed_pixels = 1 << 20, .prompt_tokens = 100}))
    __builtin_trap();
  // Its two stages: a request is decoded no earlier than sent and ready no earlier than decoded;
  // the second of two identical images hits whenever a cache holds it.
  ApiServerPipeline pipeline(model);
  encbench::Nanos previous = 0;
  for (int i = 0; i < 4; ++i) {
    const encbench::Nanos sent = i * 1'000'000;
    const encbench::Nanos decoded = pipeline.decode(sent, 1 << 16);
    const ProcessorItem image{1 << 16, 7, 1 << 20};
    const ApiServerProcessed p = pipeline.process(decoded, {&image, 1}, 100);
    if (decoded < sent || p.start_ns < decoded || p.end_ns < p.start_ns || p.end_ns < previous) __builtin_trap();
    if (i > 0 && model.processes() <= 1 && model.processor_cache_capacity_bytes() >= (1 << 20) && p.cache_hits != 1)
      __builtin_trap();
    previous = model.processes() <= 1 ? p.end_ns : 0;
  }
  must_read_back([&] { (void)parse_api_server_model(to_json(model), "fuzz round trip"); });
}

void check_model_set(std::string_view text) {
  encbench::serving::ServingModel model;
  encbench::serving::apply_overrides(model, std::string(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t reader = data[0] % 7;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (reader == 4) {
      check_model_set(rest);
      return 0;
    }
    const nlohmann::json doc = nlohmann::json::parse(rest, nullptr, false);
    if (doc.is_discarded()) return 0;
    switch (reader) {
      case 0: check_workload(doc); break;
      case 1: check_serving_model(doc); break;
      case 2: check_sim_profile(doc); break;
      case 5: check_host_model(doc); break;
      case 6: check_api_server_model(doc); break;
      default: (void)encbench::encoder::to_json(encbench::encoder::model_from_json(doc, "fuzz")).dump(); break;
    }
  } catch (const encbench::InvalidInput& e) {
    if (std::string_view(e.what()).empty()) __builtin_trap();
  }
  return 0;
}

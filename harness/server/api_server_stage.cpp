#include "harness/server/api_server_stage.hpp"

#include <algorithm>
#include <utility>

#include "harness/server/content_identity.hpp"

namespace encbench::server {

ApiServerStage::ApiServerStage(serving::ApiServerModel model, std::int64_t max_in_stage)
    : model_(std::move(model)), pipeline_(model_), max_in_stage_(max_in_stage) {}

ApiServerAdmission ApiServerStage::admit(Nanos received_ns, Nanos parse_start_ns, Nanos parse_end_ns,
                                         const ApiServerInput& input) {
  ApiServerAdmission out;
  if (in_stage_.fetch_add(1) >= max_in_stage_) {
    in_stage_.fetch_sub(1);
    std::lock_guard lock(mutex_);
    ++stats_.rejected;
    return out;
  }
  out.slot = std::make_shared<ApiServerSlot>(in_stage_);
  out.ready_ns = ready_at(received_ns, parse_start_ns, parse_end_ns, input);
  out.admitted = true;
  return out;
}

Nanos ApiServerStage::ready_at(Nanos received_ns, Nanos parse_start_ns, Nanos parse_end_ns,
                               const ApiServerInput& input) {
  if (!enabled()) return parse_end_ns;
  std::lock_guard lock(mutex_);
  const std::int64_t pixels = serving::total_pixels(input.images);
  const Nanos decoded = pipeline_.decode(received_ns, pixels);
  const serving::ApiServerProcessed p = pipeline_.process(decoded, input.images, input.prompt_tokens);
  const Nanos end = p.end_ns;
  const Nanos cost = model_.work_ns(p.cost_ns, pixels);
  ++stats_.requests;
  stats_.modelled_ns += cost;
  stats_.queue_ns += end - cost - received_ns;
  stats_.parse_ns += std::max<Nanos>(0, parse_end_ns - parse_start_ns);
  if (parse_end_ns > end) ++stats_.overruns;
  stats_.held_ns += std::max<Nanos>(0, end - parse_end_ns);
  return std::max(end, parse_end_ns);
}

ApiServerStats ApiServerStage::stats() const {
  std::lock_guard lock(mutex_);
  ApiServerStats copy = stats_;
  copy.in_stage = in_stage_.load();
  const serving::ApiServerPipelineCounters p = pipeline_.counters();
  copy.processor_cache_hits = p.processor_cache_hits;
  copy.processor_cache_evictions = p.processor_cache_evictions;
  return copy;
}

}  // namespace encbench::server

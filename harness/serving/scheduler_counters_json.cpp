#include "harness/serving/scheduler_counters_json.hpp"

namespace encbench::serving {

void add_cache_counters(nlohmann::json& engine, const SchedulerCounters& c) {
  engine["prefix_cache_queries"] = c.prefix_cache_queries;
  engine["prefix_cache_hits"] = c.prefix_cache_hits;
  engine["preempted_prefix_cache_queries"] = c.preempted_prefix_cache_queries;
  engine["preempted_prefix_cache_hits"] = c.preempted_prefix_cache_hits;
  engine["encoder_cache_hits"] = c.encoder_cache_hits;
  engine["encoder_prefix_skips"] = c.encoder_prefix_skips;
}

}  // namespace encbench::serving

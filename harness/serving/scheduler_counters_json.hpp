#pragma once
// The scheduler's cache counters as JSON, written by one function for both engines' results: the
// virtual loop's `engine` block (`encbench run --result`) and the live server's (`encbench serve`'s
// summary). They count the same things (both run serving::Scheduler), so they carry the same keys
// with the same meanings, and a counter added to SchedulerCounters is added to both by one edit.
#include <nlohmann/json.hpp>

#include "harness/serving/scheduler.hpp"

namespace encbench::serving {

// Adds prefix_cache_queries, prefix_cache_hits, preempted_prefix_cache_queries,
// preempted_prefix_cache_hits, encoder_cache_hits and encoder_prefix_skips (SchedulerCounters has
// their meanings) to the object `engine`.
void add_cache_counters(nlohmann::json& engine, const SchedulerCounters& counters);

}  // namespace encbench::serving

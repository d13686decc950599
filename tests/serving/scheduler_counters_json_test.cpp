#include "harness/serving/scheduler_counters_json.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using encbench::serving::add_cache_counters;
using encbench::serving::SchedulerCounters;

// Each cache counter lands under its own key with its own value (distinct values, so a swapped
// pair fails), the step counters are not the function's, and what the object held stays.
TEST(SchedulerCountersJson, CacheCountersEachUnderTheirKey) {
  SchedulerCounters c;
  c.steps = 1;
  c.max_running = 2;
  c.prefix_cache_queries = 101;
  c.prefix_cache_hits = 102;
  c.preempted_prefix_cache_queries = 103;
  c.preempted_prefix_cache_hits = 104;
  c.encoder_cache_hits = 105;
  c.encoder_prefix_skips = 106;
  nlohmann::json engine = {{"steps", 7}};
  add_cache_counters(engine, c);
  const nlohmann::json expected = {{"steps", 7},
                                   {"prefix_cache_queries", 101},
                                   {"prefix_cache_hits", 102},
                                   {"preempted_prefix_cache_queries", 103},
                                   {"preempted_prefix_cache_hits", 104},
                                   {"encoder_cache_hits", 105},
                                   {"encoder_prefix_skips", 106}};
  EXPECT_EQ(engine, expected);
}

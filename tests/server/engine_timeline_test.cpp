// The engine timeline recorder behind /stop_profile's engine_timeline: bounded (the first steps
// and requests of a window kept, the rest counted), inactive outside a window, fresh per window.
#include <gtest/gtest.h>

#include <string>

#include "harness/server/engine_timeline.hpp"

namespace encbench::server {
namespace {

TEST(EngineTimelineRecorder, KeepsTheFirstStepsAndRequestsAndCountsTheRest) {
  EngineTimelineRecorder recorder(3, 2);
  recorder.record_step({});  // inactive: ignored
  recorder.start();
  for (int k = 1; k <= 5; ++k) {
    EngineStepRecord s;
    s.step = k;
    recorder.record_step(s);
  }
  for (int k = 0; k < 4; ++k) recorder.record_request({"id-" + std::to_string(k), "", 0, 0, 0, -1, 0});
  const nlohmann::json j = recorder.stop_and_take_json();
  recorder.record_step({});  // stopped: ignored
  EXPECT_EQ(j["version"], kEngineTimelineVersion);
  EXPECT_EQ(j["steps"].size(), 3u);
  EXPECT_EQ(j["steps"][0]["step"], 1);
  EXPECT_EQ(j["steps_dropped"], 2);
  EXPECT_EQ(j["requests"].size(), 2u);
  EXPECT_EQ(j["requests"][1]["client_request_id"], "id-1");
  EXPECT_EQ(j["requests_dropped"], 2);
  // A new session starts empty.
  recorder.start();
  EXPECT_EQ(recorder.stop_and_take_json()["steps"].size(), 0u);
}

}  // namespace
}  // namespace encbench::server

// The live engine thread plans its steps by the virtual loop's rule
// (serving::step_timing) and waits them out to absolute deadlines. The planned schedule it records
// (not the wall clock, which a loaded or sanitized machine stretches) must be the virtual loop's
// for the same requests, step by step, to the nanosecond.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/server/engine_core_thread.hpp"
#include "harness/server/engine_timeline.hpp"
#include "harness/serving/virtual_loop.hpp"

namespace encbench::server {
namespace {

constexpr Nanos kMs = 1'000'000;

// A virtual-clock encoder whose cost depends on the step's images: 7 ms per step + 1/64 ms per
// patch, 2 ms of it host lead, 3 ms of pre-processing, 6 ms of post-forward host work. The device
// work left when the host issued the last op is 1/32 ms per patch beyond the first image's 256:
// a one-image step ends with the host caught up (all 6 ms exposed); two images leave 8 ms queued,
// which hides all of it (step_timing.hpp's max(0, post - end_wait)).
serving::EncoderHook scripted_encoder() {
  return [](const std::vector<vision::GridTHW>& grids) {
    serving::EncoderStepResult r;
    r.forwards = 1;
    Nanos patches = 0;
    for (const vision::GridTHW& g : grids) patches += g.patches();
    r.virtual_forward_ns = 7 * kMs + patches * kMs / 64;
    r.host_lead_ns = 2 * kMs;
    r.host_extra_ns = 3 * kMs;
    r.host_post_ns = 6 * kMs;
    r.end_wait_ns = std::max<Nanos>(0, patches - 256) * kMs / 32;
    return r;
  };
}

serving::StepCostModel cost() {
  serving::StepCostModel c{.base_ms = 4, .per_seq_ms = 0.25, .per_prefill_token_ms = 0.0078125};
  c.async_scheduling = true;
  c.host_parts = {{"schedule", 1, 0.125, true, false}, {"launch", 0.5, 0, true, true}};
  return c;
}

struct ScriptedRequest {
  Nanos offset_ns;
  std::int64_t prompt_tokens;
  std::vector<vision::GridTHW> images;  // 16x16 patches = 64 tokens at merge 2
  std::int64_t output_tokens;
};

std::vector<ScriptedRequest> workload() {
  const vision::GridTHW image{1, 16, 16};
  return {{0, 300, {image}, 4},          {0, 120, {}, 3},         {5 * kMs, 200, {image, image}, 5},
          {30 * kMs, 90, {}, 6},         {150 * kMs, 400, {image}, 3}, {151 * kMs, 80, {image}, 2},
          {151 * kMs, 60, {}, 4}};
}

// 64 tokens an image; no identity (each image its own encoder cache entry).
std::vector<serving::SchedImage> sched_images(const ScriptedRequest& r) {
  std::vector<serving::SchedImage> images;
  for (const vision::GridTHW& grid : r.images) images.push_back({64, grid});
  return images;
}

// The live engine, every request submitted before it starts with its ready time in the future
// (held until due), then run to completion; returns the recorded steps.
nlohmann::json live_steps(const std::vector<ScriptedRequest>& requests, Nanos base, EngineCoreStats& stats) {
  EngineCoreConfig config;
  config.max_num_seqs = 3;
  config.max_num_batched_tokens = 512;
  config.lm = cost();
  config.encoder = scripted_encoder();
  config.encoder_time = EngineCoreConfig::EncoderTime::modelled;
  config.timeline = std::make_shared<EngineTimelineRecorder>(1000, 1000);
  config.timeline->start();
  EngineCoreThread engine(config);
  std::mutex mutex;
  std::condition_variable done;
  std::size_t finished = 0;
  for (const ScriptedRequest& r : requests) {
    EngineRequest e;
    e.prompt_tokens = r.prompt_tokens;
    e.images = sched_images(r);
    e.plan = {r.output_tokens, FinishReason::length};
    e.ready_ns = base + r.offset_ns;
    const auto handle = engine.submit(std::move(e), [&](EngineEvent event) {
      if (!event.finished) return;
      std::lock_guard lock(mutex);
      ++finished;
      done.notify_all();
    });
    EXPECT_NE(handle, nullptr);
  }
  engine.start();
  {
    std::unique_lock lock(mutex);
    EXPECT_TRUE(done.wait_for(lock, std::chrono::seconds(120), [&] { return finished == requests.size(); }));
  }
  stats = engine.stats();
  engine.stop();
  return config.timeline->stop_and_take_json()["steps"];
}

serving::VirtualArmResult virtual_run(const std::vector<ScriptedRequest>& requests) {
  std::vector<serving::VirtualRequest> virt;
  for (const ScriptedRequest& r : requests) {
    serving::VirtualRequest v;
    v.arrival_ns = r.offset_ns;
    v.request.prompt_tokens = r.prompt_tokens;
    v.request.images = sched_images(r);
    v.request.image_offset = r.prompt_tokens - v.request.image_tokens();
    v.request.output_tokens = r.output_tokens;
    virt.push_back(v);
  }
  serving::SchedulerConfig scheduler;
  scheduler.max_num_seqs = 3;
  scheduler.max_num_batched_tokens = 512;
  serving::VirtualArmOptions options;
  options.keep_steps = true;
  return serving::run_virtual_arm(virt, scheduler, cost(), scripted_encoder(), options);
}

TEST(LiveEngineSchedule, ThePlannedStepsAreTheVirtualLoopsToTheNanosecond) {
  const std::vector<ScriptedRequest> requests = workload();
  const serving::VirtualArmResult virt = virtual_run(requests);
  const Nanos base = now_ns();
  EngineCoreStats stats;
  const nlohmann::json live = live_steps(requests, base, stats);
  ASSERT_EQ(live.size(), virt.steps.size());
  ASSERT_GE(virt.steps.size(), 8u);  // the workload has idle gaps, batching and a seat limit
  bool idle_gap = false;
  int exposed_post = 0, hidden_post = 0;  // steps whose post-forward work outlasted the queue, or not
  for (std::size_t k = 0; k < virt.steps.size(); ++k) {
    const serving::VirtualStep& v = virt.steps[k];
    const nlohmann::json& l = live[k];
    SCOPED_TRACE("step " + std::to_string(k));
    EXPECT_EQ(l["planned_start_ns"].get<Nanos>() - base, v.start_ns - virt.start_ns);
    EXPECT_EQ(l["planned_encoder_ns"].get<Nanos>(), v.encoder_ns);
    EXPECT_EQ(l["planned_lm_ns"].get<Nanos>(), v.lm_ns);
    EXPECT_EQ(l["sequences"].get<std::int64_t>(), v.sequences);
    EXPECT_EQ(l["images"].get<std::int64_t>(), v.images);
    // The real clock may deliver a step late, never early.
    EXPECT_GE(l["end_ns"].get<Nanos>(),
              l["planned_start_ns"].get<Nanos>() + l["planned_encoder_ns"].get<Nanos>() + l["planned_lm_ns"].get<Nanos>());
    if (v.images == 1) {
      // Caught up at the forward's end: the step carries pre-processing and all post work.
      EXPECT_EQ(l["encoder_host_extra_ns"].get<Nanos>(), 9 * kMs);
      ++exposed_post;
    } else if (v.images >= 2) {
      EXPECT_EQ(l["encoder_host_extra_ns"].get<Nanos>(), 3 * kMs);  // the queue covered the post work
      ++hidden_post;
    }
    if (k > 0 && v.start_ns > virt.steps[k - 1].start_ns + virt.steps[k - 1].encoder_ns + virt.steps[k - 1].lm_ns)
      idle_gap = true;
  }
  EXPECT_TRUE(idle_gap) << "the workload should leave the engine idle between arrivals";
  EXPECT_GT(exposed_post, 0) << "some step should expose its post-forward host work";
  EXPECT_GT(hidden_post, 0) << "some step should hide it behind the queued device work";
  EXPECT_EQ(stats.late_submissions, 0);  // every request was there before its step was planned
  EXPECT_EQ(stats.requests_finished, static_cast<std::int64_t>(requests.size()));
  EXPECT_EQ(stats.timed_steps, static_cast<std::int64_t>(virt.steps.size()));
}

}  // namespace
}  // namespace encbench::server

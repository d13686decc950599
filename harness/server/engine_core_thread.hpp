#pragma once
// The live server's engine-core thread (vLLM's EngineCore loop) on the real clock: vLLM V1's
// scheduler (harness/serving/scheduler.hpp, the same state machine the virtual loop drives) on its
// own thread.
//
// Every step: the scheduler plans the step (running requests first, then waiting ones FCFS,
// chunked prefill, whole-image encoder budget, KV blocks with preemption); the encoder hook runs
// on the images the plan encodes; then the step's length follows from the rule the virtual loop
// applies too (serving::step_timing, harness/serving/step_timing.hpp: the encoder part, the
// modelled LM step and the host work that overlaps it). A request whose prefill completes in a
// step emits its first token at the end of that step; decoding requests emit one token per step.
//
// The schedule is planned, then waited out: a step starts when the one before
// it was planned to end (or, idle, when its first request was due at the engine: EngineRequest::
// ready_ns), and ends at that start plus its modelled length, an absolute deadline on the
// monotonic clock. So what the engine really spent inside the step (scheduling, the encoder
// forward's own computation, delivering tokens) comes out of the step's modelled time instead of
// adding to it, and a late wake-up delays that step's tokens but not the next step's deadline:
// errors do not accumulate. A request that reaches the engine before it is due waits until the
// step that starts at or after its ready time, as the virtual loop releases it.
//
// Output goes to a per-request sink called on the engine thread; the HTTP layer forwards it to the
// connection's thread. In null mode there is no encoder and no modelled time: a request's whole
// output is emitted as soon as it is admitted.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/clock.hpp"
#include "harness/serving/step_cost.hpp"
#include "harness/serving/encoder_step.hpp"
#include "harness/serving/scheduler.hpp"
#include "harness/server/engine_timeline.hpp"
#include "harness/vision/vision_geometry.hpp"

namespace encbench::server {

// Stand-in encoder until the real encoder path is wired: sleeps for
//     per_forward_ms + per_patch_us * patches + per_patch_sq_ns * sum(patches_i^2) / 1000
// per image (attention is quadratic in each image's patches), reporting all of it as busy time.
struct EncoderCostModel {
  double per_forward_ms = 1.0;
  double per_patch_us = 2.0;
  double per_patch_sq_ns = 0.5;
  double forward_ms(const vision::GridTHW& grid) const;
};
serving::EncoderHook make_cost_model_encoder(EncoderCostModel model);

enum class FinishReason { stop, length, error, aborted };
std::string_view to_string(FinishReason reason);

// How many tokens a request generates: max_tokens with ignore_eos, else the seeded natural stop
// length L = 1 + (hash(seed) mod (2*eos_mean_tokens - 1)) capped at max_tokens.
struct OutputPlan {
  std::int64_t tokens = 0;
  FinishReason finish = FinishReason::length;
};
OutputPlan plan_output(std::uint64_t seed, std::int64_t max_tokens, bool ignore_eos,
                       std::int64_t eos_mean_tokens);

// Deterministic pseudo-word for output token `index` of a request seeded with `seed`
// (" lorem", " ipsum", ...: a leading space, ASCII letters only, safe in JSON).
std::string_view pseudo_word(std::uint64_t seed, std::int64_t index);

struct EngineCoreConfig {
  int max_num_seqs = 256;
  std::int64_t max_num_batched_tokens = 8192;
  // vLLM's --max-num-encoder-input-tokens: multimodal tokens (patches / merge^2) one step may
  // encode; requests with images are admitted while it lasts. 0 = max_num_batched_tokens.
  std::int64_t max_num_encoder_input_tokens = 0;
  // Requests queued before admission; submit() refuses more (the server answers 503).
  std::int64_t max_waiting = 4096;
  // KV cache capacity in tokens (0: unlimited) and its block size: a full cache preempts the
  // most recently admitted request (harness/serving/scheduler.hpp).
  std::int64_t kv_capacity_tokens = 0;
  std::int64_t kv_block_tokens = 128;
  serving::IdleHook on_idle;                 // optional
  // The LM step and the engine core's host work (harness/serving/step_cost.hpp): with a sim device
  // and a model preset that has a "language_model" block, serve derives it from a roofline
  // (harness/serving/lm_roofline.hpp); defaults (no source) otherwise.
  serving::StepCostModel lm;
  bool null_mode = false;           // no encoder, no modelled time, whole output at once
  serving::EncoderHook encoder;              // required unless null_mode
  // What a step's encoder part costs: `measured`, the hook's wall time on this machine (a cpu
  // device, a real-clock sim device, the cost-model stand-in); `modelled`, the virtual-clock
  // forward the hook reports (virtual_forward_ns, host_lead_ns), waited out like the LM step, so
  // the live engine's steps are the virtual loop's exactly (`encbench serve --encoder-clock virtual`).
  enum class EncoderTime { measured, modelled };
  EncoderTime encoder_time = EncoderTime::measured;
  // Optional: records steps and requests while active (POST /start_profile../stop_profile).
  std::shared_ptr<EngineTimelineRecorder> timeline;
};

// Sent to a request's sink, on the engine thread, in order.
struct EngineEvent {
  std::int64_t first_token = 0;     // index of the first token in this event
  std::int64_t token_count = 0;     // new tokens (may be 0 on an error)
  bool finished = false;
  FinishReason finish = FinishReason::length;
  std::string error;                // FinishReason::error
  bool out_of_memory = false;       // FinishReason::error caused by device memory exhaustion
};
using EngineSink = std::function<void(EngineEvent)>;

// Who a request is, for the engine timeline (EngineRequestRecord): set by the HTTP layer.
struct RequestTag {
  std::string client_request_id;  // x-request-id
  std::string response_id;
  Nanos arrival_ns = 0;           // header read
};

struct EngineRequest {
  RequestTag tag;
  std::int64_t prompt_tokens = 0;
  // Its images in prompt order, each with its multimodal tokens (the encoder budget's unit; 0: one)
  // and mm hash (the encoder cache's key; 0: unknown, never a hit). They follow the text.
  std::vector<serving::SchedImage> images;
  // Its prompt's identity (text and images' mm hashes): serving::SchedRequest::content_hash, which
  // prefix caching keys on. 0: unknown, never a hit.
  std::uint64_t content_hash = 0;
  OutputPlan plan;
  // When the request is due at the engine on the steady clock (the API-server stage's modelled
  // end): it waits for the first step planned to start at or after it, as the virtual loop
  // releases a request into the scheduler. 0: due when submitted, taken by the next step planned.
  Nanos ready_ns = 0;
};

// Shared between the submitter and the engine: cancel() (any thread) makes the engine drop the
// request at its next step, emitting nothing more.
class RequestHandle {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

struct EngineCoreStats {
  std::int64_t waiting = 0;
  std::int64_t running = 0;
  // The scheduler's counters (steps, preemptions, largest batch, tokens and encoder tokens in one
  // step, KV blocks, waiting queue); in null mode only `steps` counts, one per batch of admissions.
  serving::SchedulerCounters scheduler;
  std::int64_t requests_admitted = 0;
  std::int64_t requests_finished = 0;     // stop or length
  std::int64_t requests_aborted = 0;      // cancelled by the client side
  std::int64_t requests_failed = 0;       // encoder error
  std::int64_t requests_rejected = 0;     // refused by submit(): waiting queue full
  std::int64_t encoder_oom = 0;           // encoder steps that ran out of device memory
  std::int64_t idle_trims = 0;            // on_idle calls
  std::int64_t prompt_tokens = 0;         // of admitted requests
  std::int64_t generation_tokens = 0;     // emitted
  std::int64_t images = 0;                // encoded
  std::int64_t encoder_calls = 0;         // hook invocations
  std::int64_t encoder_forwards = 0;
  std::int64_t encoder_syncs = 0;
  Nanos encoder_wall_ns = 0;              // host time inside the hook
  Nanos encoder_device_busy_ns = 0;
  Nanos encoder_device_idle_ns = 0;
  // sim (real clock): sum over forwards of each forward's p99 op lateness (mean = / forwards)
  double encoder_lateness_p99_us_sum = 0;
  std::uint64_t encoder_peak_device_bytes = 0;  // largest allocator peak of any encoder forward
  Nanos lm_modelled_ns = 0;               // sum of modelled LM step times
  // How late the engine thread woke after each modelled step's deadline (the machine's
  // scheduling: a loaded machine delays every step, which the real clock then measures).
  Nanos step_lateness_sum_ns = 0;
  Nanos step_lateness_max_ns = 0;
  std::int64_t timed_steps = 0;           // steps whose lateness was measured
  // Requests that reached the engine after the step their ready time belonged to was planned (the
  // real clock delivered them late; the virtual loop would have scheduled them one step earlier).
  std::int64_t late_submissions = 0;
  Nanos encoder_modelled_ns = 0;          // sum of the steps' encoder parts (step_timing)
  Nanos uptime_ns = 0;
};

class EngineCoreThread {
 public:
  explicit EngineCoreThread(EngineCoreConfig config);  // throws InvalidInput for bad limits
  ~EngineCoreThread();                              // stops and joins
  EngineCoreThread(const EngineCoreThread&) = delete;
  EngineCoreThread& operator=(const EngineCoreThread&) = delete;

  void start();
  void stop();  // drops waiting and running requests without calling their sinks

  // Thread-safe. The sink is called on the engine thread. Returns nullptr (and never calls the
  // sink) when max_waiting requests are already waiting.
  std::shared_ptr<RequestHandle> submit(EngineRequest request, EngineSink sink);
  EngineCoreStats stats() const;
  const EngineCoreConfig& config() const { return config_; }

 private:
  struct State;
  void run();
  EngineCoreConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace encbench::server

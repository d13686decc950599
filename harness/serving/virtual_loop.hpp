#pragma once
// One arm in virtual time: arrivals, vLLM's scheduler (scheduler.hpp, the same one the live
// server's engine-core thread runs), the encoder step (encoder_step.hpp) on the virtual-clock sim
// device and the step cost model as one discrete-event simulation. No HTTP, no threads, no sleeping:
// bit-reproducible, and what the client would have observed is written as the serving client's
// own RequestRecords, so vLLM's metric definitions (client/metrics.cpp) are computed by the same
// code as for a live run.
//
// Time: a request sent by the client first passes vLLM's API-server stage (api_server_pipeline.hpp:
// its media threads decode, then its processes take requests FIFO, each for its modelled input
// processing, the processor cache skipping the HF processor for an image seen before) when the
// options name one; the engine is busy from a step's start to start + encoder time + LM step time; tokens of
// the step reach the client at its end; a request that reaches the engine while a step runs waits
// for the next step (vLLM's engine core loop). TTFT counts from the client's send.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/client/records.hpp"
#include "harness/core/clock.hpp"
#include "harness/serving/api_server_model.hpp"
#include "harness/serving/api_server_pipeline.hpp"
#include "harness/serving/encoder_step.hpp"
#include "harness/serving/scheduler.hpp"
#include "harness/serving/step_cost.hpp"
#include "harness/serving/step_timing.hpp"

namespace encbench::serving {

struct VirtualRequest {
  Nanos arrival_ns = 0;               // offset from the start
  std::int64_t client_prompt_tokens = 0;  // what the client counts (vLLM: text only)
  // Its images as the API server gets them: pixels as sent (its work), mm_hash and the bytes its
  // processor cache counts for each (api_server_pipeline.hpp).
  std::vector<serving::ProcessorItem> images_sent;
  serving::SchedRequest request;       // what the engine schedules
};

// The scheduler's counters and what the virtual loop adds: the encoder's and the LM's time.
struct VirtualEngineCounters {
  serving::SchedulerCounters scheduler;
  std::int64_t images = 0;
  std::int64_t encoder_steps = 0;
  std::int64_t encoder_syncs = 0;
  std::int64_t encoder_failures = 0;  // encoder steps that failed
  Nanos encoder_ns = 0;               // virtual encoder time (forwards + host pre-processing)
  Nanos encoder_device_busy_ns = 0;
  Nanos encoder_device_idle_ns = 0;
  Nanos lm_ns = 0;                    // modelled LM step time
  Nanos api_server_ns = 0;            // modelled API-server work (decode + serial), all requests
  Nanos api_server_queue_ns = 0;      // time requests waited for a media thread or an API-server process
  Nanos api_server_decode_ns = 0;     // of api_server_ns: the decode
  std::int64_t api_server_cache_hits = 0;       // processor-cache hits (the HF processor skipped)
  std::int64_t api_server_cache_evictions = 0;  // items the processor cache's LRU evicted
};

// One engine step as it ran (for timelines): start, encoder part, LM part, what it held.
struct VirtualStep {
  Nanos start_ns = 0;
  Nanos encoder_ns = 0;
  Nanos lm_ns = 0;
  std::int32_t sequences = 0;
  std::int32_t images = 0;
  Nanos encoder_busy_ns = 0;
  std::map<std::string, Nanos> encoder_idle_by_class;  // gap class -> idle ns in the forward
};

// Per request, what the engine did with it (for the TTFT decomposition): when it was first
// scheduled, and the step that encoded its images (-1: none).
struct VirtualRequestTrace {
  Nanos api_server_start_ns = 0;  // its API-server processing began (= sent without a stage)
  Nanos engine_arrival_ns = 0;    // it reached the scheduler (= sent without a stage)
  Nanos first_scheduled_ns = 0;
  std::int64_t encoder_step = -1;
};

struct VirtualArmOptions {
  int max_concurrency = 0;  // client-side cap on requests in flight (vLLM --max-concurrency); 0 = none
  bool keep_steps = false;  // fill steps and traces (memory grows with steps)
  // Run-to-run noise of a real server: each engine step's LM and encoder time times a
  // mean-1 lognormal factor of this coefficient of variation, drawn from jitter_seed (two arms with
  // different seeds are two independent runs). 0 = no jitter.
  double step_time_cv = 0;
  std::uint64_t jitter_seed = 0;
  // Each request reaches the API server (the scheduler without one) a delay after it was sent:
  // (requests sent earlier and still in transit + 1) x per_request x a lognormal factor (median 1,
  // this sigma of the log), drawn from jitter_seed's own stream. Requests sent at once then arrive
  // in an order that differs between runs. 0 = arrives when sent.
  Nanos arrival_jitter_per_request_ns = 0;
  double arrival_jitter_sigma = 0;
  // vLLM's API-server stage before the scheduler; the default (no processes) has none.
  ApiServerModel api_server;
};

struct VirtualArmResult {
  std::vector<client::RequestRecord> records;  // request order; times on the virtual clock
  Nanos start_ns = 0;
  Nanos end_ns = 0;                            // last token
  VirtualEngineCounters engine;
  std::vector<VirtualStep> steps;             // with options.keep_steps
  std::vector<VirtualRequestTrace> traces;    // with options.keep_steps, request order
};

// Runs every request to completion. The encoder hook must run on a virtual clock (it reports
// virtual_forward_ns); requests are in arrival order. Throws InvalidInput for a request the
// scheduler can never run.
VirtualArmResult run_virtual_arm(const std::vector<VirtualRequest>& requests, const serving::SchedulerConfig& scheduler,
                                 const serving::StepCostModel& cost, const serving::EncoderHook& encoder,
                                 const VirtualArmOptions& options = {});

}  // namespace encbench::serving

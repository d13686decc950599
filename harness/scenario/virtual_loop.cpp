#include "harness/scenario/virtual_loop.hpp"

#include <algorithm>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::scenario {
namespace {

// The virtual clock's origin: RequestRecord uses 0 for "never".
constexpr Nanos kOrigin = 1'000'000'000;

client::RequestRecord start_record(std::size_t index, const VirtualRequest& r) {
  client::RequestRecord rec;
  rec.index = index;
  rec.request_id = "virtual-" + std::to_string(index);
  rec.dispatched = true;
  rec.intended_ns = rec.arrival_ns = rec.admitted_ns = rec.dispatch_ns = rec.sent_ns = kOrigin + r.arrival_ns;
  rec.prompt_len_client = r.client_prompt_tokens;
  // No usage.prompt_tokens: the seeds' vLLM client (before vLLM PR #38654) counted the prompt
  // itself (text only), which calculate_metrics does when usage is absent.
  rec.usage_prompt_tokens = -1;
  rec.choices_ns.reserve(static_cast<std::size_t>(r.request.output_tokens));
  return rec;
}

void record_token(client::RequestRecord& rec, const engine::EmittedToken& token, Nanos now) {
  if (token.index == 0) {
    rec.headers_ns = now;
    rec.first_choices_ns = now;
    rec.http_status = 200;
  }
  rec.choices_ns.push_back(now);
  rec.last_choices_ns = now;
  ++rec.content_chunks;
  ++rec.data_events;
  if (!token.finished) return;
  rec.end_ns = now;
  rec.usage_completion_tokens = token.index + 1;
  rec.data_events += 2;  // usage chunk and [DONE], as vLLM streams them
  rec.saw_done = true;
  rec.success = true;
}

void record_failure(client::RequestRecord& rec, const std::string& error, Nanos now) {
  rec.end_ns = now;
  rec.http_status = 200;
  rec.error_events = 1;
  rec.first_error_event = error;
  rec.success = false;
  rec.error = error;
  rec.failure_kind = "no_valid_chunk";
}

// Encoder part of one step on the virtual clock; failed requests leave the scheduler.
Nanos run_encoder_step(const server::EncoderHook& encoder, const engine::StepPlan& plan, engine::Scheduler& scheduler,
                       std::vector<client::RequestRecord>& records, Nanos now, VirtualEngineCounters& c) {
  if (plan.grids.empty()) return 0;
  const server::EncoderStepResult step = encoder(plan.grids);
  ++c.encoder_steps;
  c.images += static_cast<std::int64_t>(plan.grids.size());
  const Nanos took = step.virtual_forward_ns + step.host_extra_ns;
  c.encoder_ns += took;
  c.encoder_syncs += step.syncs;
  c.encoder_device_busy_ns += step.device_busy_ns;
  c.encoder_device_idle_ns += step.device_idle_ns;
  if (!step.ok) {
    ++c.encoder_failures;
    for (const engine::RequestId id : plan.encoded) {
      (void)scheduler.remove(id);
      record_failure(records[id], "encoder failed: " + step.error, now + took);
    }
  }
  return took;
}

}  // namespace

VirtualArmResult run_virtual_arm(const std::vector<VirtualRequest>& requests, const engine::SchedulerConfig& config,
                                 const engine::StepCostModel& cost, const server::EncoderHook& encoder) {
  VirtualArmResult out;
  out.records.reserve(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    require(i == 0 || requests[i].arrival_ns >= requests[i - 1].arrival_ns, "virtual requests must be in arrival order");
    out.records.push_back(start_record(i, requests[i]));
  }
  engine::Scheduler scheduler(config);
  VirtualEngineCounters& c = out.engine;
  Nanos now = 0;
  std::size_t next = 0;
  while (next < requests.size() || scheduler.has_work()) {
    // Arrivals up to now join the waiting queue before the step is planned.
    while (next < requests.size() && requests[next].arrival_ns <= now) {
      scheduler.add(next, requests[next].request);
      ++next;
    }
    if (!scheduler.has_work()) {
      now = requests[next].arrival_ns;  // idle until the next arrival
      continue;
    }
    c.max_waiting = std::max(c.max_waiting, static_cast<std::int64_t>(scheduler.waiting()));
    const engine::StepPlan& plan = scheduler.schedule();
    if (plan.empty()) {
      require(next < requests.size(), "the scheduler can make no progress with " +
                                          std::to_string(scheduler.waiting()) + " waiting requests and none arriving");
      now = requests[next].arrival_ns;
      continue;
    }
    const Nanos encoder_ns = run_encoder_step(encoder, plan, scheduler, out.records, kOrigin + now, c);
    const Nanos lm_ns = static_cast<Nanos>(cost.step_ms(plan.sequences(), plan.prefill_tokens, plan.context_tokens) * 1e6);
    c.lm_ns += lm_ns;
    now += encoder_ns + lm_ns;
    for (const engine::EmittedToken& token : scheduler.complete()) record_token(out.records[token.id], token, kOrigin + now);
  }
  const engine::SchedulerCounters& sc = scheduler.counters();
  c.steps = sc.steps;
  c.preemptions = sc.preemptions;
  c.max_running = sc.max_running;
  c.max_kv_blocks_used = sc.max_kv_blocks_used;
  out.start_ns = kOrigin;
  out.end_ns = kOrigin + now;
  return out;
}

}  // namespace encbench::scenario

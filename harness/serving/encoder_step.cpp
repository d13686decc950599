#include "harness/serving/encoder_step.hpp"

#include <algorithm>
#include <exception>
#include <limits>
#include <new>

#include "harness/core/error.hpp"
#include "harness/device/device.hpp"
#include "harness/device/host_model.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/encoder/encoder.hpp"
#include "harness/encoder/model_config.hpp"
#include "harness/encoder/toggles.hpp"

namespace encbench::serving {
namespace {

// The device and the runner live as long as the hook (the engine's copy of it): one runner per
// device, called from one thread at a time (the engine's), so no locking.
struct EncoderPath {
  std::unique_ptr<device::Device> device;
  std::unique_ptr<encoder::EncoderRunner> runner;
};

std::unique_ptr<device::Device> make_encoder_device(const EncoderStepOptions& o) {
  device::DeviceOptions d;
  d.spec = o.device;
  d.op_map = o.op_map;
  d.device_threads = o.device_threads;
  d.record = true;  // the forward's report (busy/idle/syncs) comes from the recording
  // --device-memory-gb: the allocator's budget (0: the sim profile's HBM size, unlimited on cpu).
  d.memory_budget_bytes = static_cast<std::uint64_t>(o.device_memory_gb * 1073741824.0);
  d.launch_overhead_ns = static_cast<Nanos>(std::max(0.0, o.dispatch_us_per_op) * 1e3);
  if (o.virtual_clock) {
    // Virtual time: host time is modelled (the dispatch above + the host model's costs), never
    // this machine's CPU time.
    d.clock = device::ClockMode::virtual_time;
    d.host_time = device::HostTime::model;
  }
  if (!o.profiles_dir.empty() && std::filesystem::is_directory(o.profiles_dir)) d.profiles_dir = o.profiles_dir;
  if (o.virtual_clock) {
    const auto dir = d.profiles_dir.empty() ? device::default_profiles_dir() : d.profiles_dir;
    d.host_model = std::make_shared<const device::HostModel>(device::load_host_model(o.host_model, dir));
  }
  return device::make_device(d);
}

// Weights (loaded by the runner) and the start-up dummy forward must fit the budget (vLLM
// profiles the encoder with a dummy batch before serving; here it also keeps one-time init work
// of the toggles and the allocator's first fills out of the first requests' TTFT).
std::unique_ptr<encoder::EncoderRunner> make_warm_runner(const EncoderStepOptions& o, device::Device& device) {
  encoder::EncoderConfig cfg;
  cfg.model = encoder::load_model(o.model);
  cfg.toggles = encoder::parse_preset_spec(o.encoder_preset);
  cfg.mlp = o.encoder_mlp;
  cfg.seed = o.seed;
  cfg.keep_host_weights = false;
  const auto too_small = [&](const char* what) {
    return InvalidInput("--device-memory-gb " + std::to_string(o.device_memory_gb) +
                        " is too small for the encoder's weights and a 32x32-patch warm-up forward: " + what);
  };
  try {
    auto runner = std::make_unique<encoder::EncoderRunner>(cfg, device);
    (void)runner->forward(std::vector<vision::GridTHW>{{1, 32, 32}});
    return runner;
  } catch (const encoder::OutOfDeviceMemoryAt& e) {
    throw too_small(e.what());
  } catch (const device::OutOfDeviceMemory& e) {
    throw too_small(e.what());
  }
}

ProfiledForward profiled(const encoder::ForwardReport& report, std::size_t images, const encoder::EncoderRunner& runner) {
  ProfiledForward f;
  f.images = static_cast<int>(images);
  f.device_busy_ns = report.device_busy_ns;
  f.device_idle_ns = report.idle_ns;
  f.syncs = report.syncs;
  f.lateness_p99_us = report.lateness.p99_us;
  f.peak_device_bytes = report.peak_bytes_in_use;
  f.idle_ns_by_class = report.gaps.idle_ns_by_class;
  f.count_by_class = report.gaps.count_by_class;
  f.timeline = runner.last_timeline();
  return f;
}

// The device's waits for the host before the forward's first sync (all of them without a sync).
Nanos host_lead_ns(const timeline::GapAnalysis& gaps) {
  Nanos first_sync = std::numeric_limits<Nanos>::max();
  for (const timeline::Gap& gap : gaps.gaps)
    if (gap.gap_class == timeline::GapClass::sync_stall) first_sync = std::min(first_sync, gap.start_ns);
  Nanos lead = 0;
  for (const timeline::Gap& gap : gaps.gaps)
    if (gap.gap_class == timeline::GapClass::host_wait && gap.end_ns <= first_sync) lead += gap.duration_ns();
  return lead;
}

void fill_from_report(EncoderStepResult& step, const encoder::ForwardReport& report, bool virtual_clock) {
  step.forwards = 1;
  if (virtual_clock) {
    step.virtual_forward_ns = report.forward_ns;
    step.host_lead_ns = std::min(host_lead_ns(report.gaps), report.forward_ns);
    step.end_wait_ns = std::clamp<Nanos>(report.end_wait_ns, 0, report.forward_ns);
  }
  for (const auto& [gap_class, ns] : report.gaps.idle_ns_by_class)
    step.idle_ns_by_class[std::string(timeline::to_string(gap_class))] = ns;
  step.device_busy_ns = report.device_busy_ns;
  step.device_idle_ns = report.idle_ns;
  step.syncs = static_cast<int>(report.syncs);
  step.lateness_p99_us = report.lateness.p99_us;
  step.peak_device_bytes = report.peak_bytes_in_use;
}

void fail(EncoderStepResult& step, std::string error, bool out_of_memory) {
  step.ok = false;
  step.out_of_memory = out_of_memory;
  step.error = std::move(error);
}

// The step's modelled host work around the forward: before it (host_extra) and after it (post).
struct StepHostWork {
  Nanos before_ns = 0;
  Nanos after_ns = 0;
};

// One step's forward. A failure fails the step's requests (the runner and the engine go on).
EncoderStepResult run_forward(EncoderPath& path, ForwardObserver* observer, StepHostWork host, bool virtual_clock,
                              const std::vector<vision::GridTHW>& batch) {
  EncoderStepResult step;
  step.host_extra_ns = host.before_ns;
  step.host_post_ns = host.after_ns;
  try {
    // All images admitted in one step go through one forward (one cu_seqlens segment each), as
    // vLLM batches a step's multimodal inputs.
    // Profiling off: one relaxed load, and the runner drops its timeline as usual.
    const bool profiling = observer != nullptr && observer->active();
    path.runner->set_keep_timeline(profiling);
    const encoder::ForwardReport report = path.runner->forward(batch);
    if (profiling) observer->record(profiled(report, batch.size(), *path.runner));
    fill_from_report(step, report, virtual_clock);
  } catch (const encoder::OutOfDeviceMemoryAt& e) {
    // The runner names the layer and allocation site of a device::OutOfDeviceMemory.
    fail(step, e.what(), true);
  } catch (const device::OutOfDeviceMemory& e) {
    // Over the budget even after the allocator freed its cache and retried: the step's requests
    // get 503, the runner and the server go on with the next step.
    fail(step, e.what(), true);
  } catch (const std::bad_alloc& e) {
    // The host itself is out of memory (an address-space cap below the budget): the same answer.
    fail(step, std::string("out of device memory (a host allocation failed: ") + e.what() + ")", true);
  } catch (const std::exception& e) {
    fail(step, std::string("encoder forward failed: ") + e.what(), false);
  }
  return step;
}

}  // namespace

EncoderStep make_encoder_step(const EncoderStepOptions& o, std::shared_ptr<ForwardObserver> observer) {
  auto path = std::make_shared<EncoderPath>();
  path->device = make_encoder_device(o);
  path->runner = make_warm_runner(o, *path->device);
  EncoderStep step;
  step.measured_op_times = path->device->info().measured_op_times;
  // Engine idle: the device has finished every op (the engine ran no step since the last
  // forward returned), so cached blocks above the high-water mark go back to the system and RSS
  // falls back after a large request. Runs on the engine thread, like the forwards.
  step.on_idle = [path, keep = static_cast<std::size_t>(o.device_cache_keep_mb * 1048576.0)] {
    path->device->synchronize();
    (void)path->device->allocator().trim(keep);
  };
  require(o.host_post_forward_share >= 0 && o.host_post_forward_share <= 1,
          "encoder host post-forward share must be in [0, 1]");
  const double host_ms = std::max(0.0, o.host_ms_per_step);
  const Nanos after = static_cast<Nanos>(host_ms * o.host_post_forward_share * 1e6);
  const StepHostWork host{static_cast<Nanos>(host_ms * 1e6) - after, after};
  step.hook = [path, observer, host, virtual_clock = o.virtual_clock](const std::vector<vision::GridTHW>& grids) {
    return run_forward(*path, observer.get(), host, virtual_clock, grids);
  };
  return step;
}

}  // namespace encbench::serving

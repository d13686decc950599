#pragma once
// The encoder part of an engine step: the images the scheduler planned for one step go through one
// forward of the real encoder path (encoder::EncoderRunner on a device), as vLLM's
// _execute_mm_encoder batches a step's multimodal inputs. Built from its own options (what the
// encoder runs on, with which toggles and host costs), so the live server (`encbench serve`, on the
// real clock) and the virtual A/B runs (virtual_loop.hpp, on the virtual clock) build the same step.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/core/clock.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/vision/grid.hpp"
#include "harness/timeline/gaps.hpp"
#include "harness/timeline/trace_event.hpp"

namespace encbench::serving {

// What one encoder invocation (all images admitted in one step) cost.
struct EncoderStepResult {
  bool ok = true;
  std::string error;             // when !ok: every request in the step fails with it
  bool out_of_memory = false;    // when !ok: the device ran out of memory (503, retry later)
  int forwards = 0;              // encoder forwards run (one per image for per-image encoders)
  Nanos device_busy_ns = 0;      // device time spent in ops (0 when the hook cannot tell)
  Nanos device_idle_ns = 0;      // device idle inside the forward window
  int syncs = 0;                 // host-device synchronisations
  double lateness_p99_us = 0;    // sim on the real clock: worst forward's p99 op lateness
  std::uint64_t peak_device_bytes = 0;  // allocator peak in use during the step's forward
  // Modelled host pre-processing of the step (the serving model's encoder_host_ms_per_step less
  // its post-forward share): the real-clock engine waits it out with the LM step; the virtual
  // loop adds it.
  Nanos host_extra_ns = 0;
  // Modelled host work of the step after the forward returns (encoder_host_ms_per_step x
  // encoder_host_post_forward_share): step_timing.hpp adds what end_wait_ns does not cover.
  Nanos host_post_ns = 0;
  // Virtual-clock encoder: of virtual_forward_ns, the device work still queued when the host had
  // issued the forward's last op (encoder::ForwardReport::end_wait_ns). 0 on the real clock.
  Nanos end_wait_ns = 0;
  // Virtual-clock encoder: the forward's time on the virtual clock (0 on the real clock).
  Nanos virtual_forward_ns = 0;
  // Of virtual_forward_ns, the device's waits for the host (host_wait gaps) before the forward's
  // first sync: eager host work that, with async scheduling, runs while the previous step's LM
  // still executes (serving/step_cost.hpp). 0 on the real clock.
  Nanos host_lead_ns = 0;
  // Device idle inside the forward by gap class (host_wait, sync_stall, kernel_wait, other).
  std::map<std::string, Nanos> idle_ns_by_class;
};

// Called by the engine's driver with the grids of the images one step encodes. The live engine
// measures its wall time itself; the virtual loop reads virtual_forward_ns.
using EncoderHook = std::function<EncoderStepResult(const std::vector<vision::GridTHW>&)>;
// Called each time the engine goes idle (no request waiting or running) after work: where the
// encoder returns cached device memory above its high-water mark.
using IdleHook = std::function<void()>;

// One forward as a profiler keeps it: its figures and its device timeline.
struct ProfiledForward {
  int images = 0;
  Nanos device_busy_ns = 0;
  Nanos device_idle_ns = 0;
  std::size_t syncs = 0;
  double lateness_p99_us = 0;  // sim on the real clock: p99 op lateness of this forward
  std::uint64_t peak_device_bytes = 0;  // allocator peak in use during this forward
  std::map<timeline::GapClass, Nanos> idle_ns_by_class;
  std::map<timeline::GapClass, std::size_t> count_by_class;
  timeline::Timeline timeline;  // this forward's recording
};

// Who watches the forwards (the server's /start_profile../stop_profile window). Asked before every
// forward; while active, the forward keeps its timeline and is handed over.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  virtual bool active() const = 0;
  virtual void record(ProfiledForward forward) = 0;
};

struct EncoderStepOptions {
  std::string model = "qwen3-vl-8b";       // vision model preset or path.json
  std::string device = "sim:ascend-910b";  // cpu | sim:<profile> | trace:<file>[@<profile>]
  std::filesystem::path profiles_dir = "scenarios/devices";  // absent or "": the device library's lookup
  std::filesystem::path op_map;            // trace: devices: kernel-name map ("" = the shipped one)
  std::string encoder_preset = "baseline"; // toggles (encoder/toggles.hpp presets)
  bool encoder_mlp = true;                 // norm2 + MLP per layer
  unsigned device_threads = 0;             // cpu device kernel pool (0 = all cores)
  double device_memory_gb = 0;             // allocator budget; 0: sim = profile HBM, cpu = unlimited
  double device_cache_keep_mb = 256;       // cached device memory kept when the engine goes idle
  // Host costs of the encoder that the eager framework pays and this C++ does not (negative: 0):
  // per device op dispatched, and per encoder step.
  double dispatch_us_per_op = -1;
  double host_ms_per_step = -1;
  // Of host_ms_per_step, the share vLLM runs after the tower's forward returns (0..1).
  double host_post_forward_share = 0;
  // Virtual time: the encoder on the virtual-clock sim device, host time = the modelled costs only
  // (bit-reproducible); the live server runs on the real clock.
  bool virtual_clock = false;
  // The virtual-clock encoder's host model (device/host_model.hpp; a name in
  // scenarios/devices/host-models or a path): "dispatch-only" charges nothing beyond the dispatch
  // above, the cost the serving model was fitted with.
  std::string host_model = "dispatch-only";
  std::uint64_t seed = 0;                  // weights
};

struct EncoderStep {
  EncoderHook hook;
  IdleHook on_idle;  // returns the allocator's cached memory above device_cache_keep_mb
  // trace: devices: the op times the forwards take (counts read at shutdown). Null otherwise.
  std::shared_ptr<const device::MeasuredOpTimes> measured_op_times;
};

// Builds the device and the runner and runs one 32x32-patch warm-up forward (vLLM profiles the
// encoder with a dummy batch before serving). The hook and on_idle share the device and runner and
// must be called from one thread at a time. Throws InvalidInput for a bad model, preset or device,
// or a memory budget too small for the weights and the warm-up forward.
EncoderStep make_encoder_step(const EncoderStepOptions& options, std::shared_ptr<ForwardObserver> observer = nullptr);

}  // namespace encbench::serving

#include "harness/device/device.hpp"

#include <cctype>
#include <charconv>
#include <optional>
#include <utility>

#include "harness/core/error.hpp"
#include "harness/device/cuda_module.hpp"
#include "harness/device/measured_op_times.hpp"
#include "harness/device/op_name_map.hpp"
#include "harness/device/queue_device.hpp"
#include "harness/device/sim_profile.hpp"
#include "kernels/thread_pool.hpp"
#include "harness/device/virtual_device.hpp"

namespace encbench::device {

std::string_view to_string(AllocMode mode) {
  switch (mode) {
    case AllocMode::fresh: return "fresh";
    case AllocMode::caching: return "caching";
  }
  return "unknown";
}

AllocMode parse_alloc_mode(std::string_view text) {
  if (text == "fresh") return AllocMode::fresh;
  if (text == "caching") return AllocMode::caching;
  throw InvalidInput("unknown allocator mode '" + std::string(text) + "' (known: fresh, caching)");
}

std::string_view to_string(ClockMode mode) {
  switch (mode) {
    case ClockMode::real: return "real";
    case ClockMode::virtual_time: return "virtual";
  }
  return "unknown";
}

ClockMode parse_clock_mode(std::string_view text) {
  if (text == "real") return ClockMode::real;
  if (text == "virtual") return ClockMode::virtual_time;
  throw InvalidInput("unknown clock '" + std::string(text) + "' (choices: virtual, real)");
}

Buffer::Buffer(Buffer&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::exchange(other.owner_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Buffer::~Buffer() { reset(); }

void Buffer::reset() {
  if (owner_ != nullptr && data_ != nullptr) owner_->release(data_, bytes_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

void check_buffer_range(const Buffer& buffer, std::size_t offset, std::size_t bytes, std::string_view what,
                        std::string_view label) {
  require(static_cast<bool>(buffer), std::string(what) + " '" + std::string(label) + "': empty buffer");
  require(offset <= buffer.bytes() && bytes <= buffer.bytes() - offset,
          std::string(what) + " '" + std::string(label) + "': range [" + std::to_string(offset) + ", " +
              std::to_string(offset) + "+" + std::to_string(bytes) + ") outside a buffer of " +
              std::to_string(buffer.bytes()) + " bytes");
}

DeviceSpec parse_device_spec(std::string_view spec) {
  DeviceSpec parsed;
  if (spec == "cpu") {
    parsed.backend = DeviceSpec::Backend::cpu;
    return parsed;
  }
  if (spec.starts_with("sim:")) {
    parsed.backend = DeviceSpec::Backend::sim;
    parsed.profile = std::string(spec.substr(4));
    require(!parsed.profile.empty(), "device 'sim:' needs a profile: sim:<profile> or sim:<path.json>");
    return parsed;
  }
  if (spec.starts_with("trace:")) {
    // trace:FILE[@PROFILE]: a sim device whose op times come from FILE, roofline as fallback.
    parsed.backend = DeviceSpec::Backend::sim;
    const std::string_view rest = spec.substr(6);
    const auto at = rest.rfind('@');
    parsed.trace_file = std::string(at == std::string_view::npos ? rest : rest.substr(0, at));
    if (at != std::string_view::npos) parsed.profile = std::string(rest.substr(at + 1));
    require(!parsed.trace_file.empty(), "device 'trace:' needs a trace file: trace:<file>[@<profile>]");
    require(at == std::string_view::npos || !parsed.profile.empty(),
            "device '" + std::string(spec) + "': empty profile after '@' (trace:<file>[@<profile>])");
    return parsed;
  }
  if (spec == "cuda" || spec.starts_with("cuda:")) {
    parsed.backend = DeviceSpec::Backend::cuda;
    if (spec.size() > 5) {
      const std::string_view digits = spec.substr(5);
      int index = -1;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      require(ec == std::errc() && end == digits.data() + digits.size() && index >= 0,
              "device '" + std::string(spec) + "': expected cuda or cuda:<index>");
      parsed.cuda_index = index;
    }
    return parsed;
  }
  throw InvalidInput("unknown device '" + std::string(spec) +
                     "' (known: cpu, sim:<profile> or sim:<path.json>, trace:<file>[@<profile>], cuda[:N])");
}

std::string sim_profile_name(std::string_view spec) {
  const DeviceSpec parsed = parse_device_spec(spec);
  if (parsed.backend != DeviceSpec::Backend::sim) return "";
  if (parsed.trace_file.empty() || !parsed.profile.empty()) return parsed.profile;
  return load_measured_op_times(parsed.trace_file)->suggested_profile;
}

namespace {

// The trace's op times with the kernel-name map: the one asked for (it must exist), else the
// shipped one when the profiles folder has it (a user's ENCBENCH_SCENARIOS_DIR may not).
std::shared_ptr<MeasuredOpTimes> load_trace_op_times(const std::string& trace_file,
                                                     const std::filesystem::path& op_map_path,
                                                     const std::filesystem::path& profiles_dir) {
  std::optional<OpNameMap> op_map;
  if (!op_map_path.empty()) {
    require(std::filesystem::is_regular_file(op_map_path), "--op-map: no such file: " + op_map_path.string());
    op_map = load_op_name_map(op_map_path);
  } else if (const auto shipped = default_op_name_map_path(profiles_dir); std::filesystem::is_regular_file(shipped)) {
    op_map = load_op_name_map(shipped);
  }
  return load_measured_op_times(trace_file, op_map ? &*op_map : nullptr);
}

}  // namespace

std::unique_ptr<Device> make_device(const DeviceOptions& options) {
  const DeviceSpec spec = parse_device_spec(options.spec);
  require(options.clock == ClockMode::real || spec.backend == DeviceSpec::Backend::sim,
          "--clock virtual needs a sim device (sim:<profile>); device '" + options.spec +
              "' runs on the real clock (choices for it: real)");
  require(options.op_map.empty() || !spec.trace_file.empty(),
          "--op-map maps a trace's kernel names: it needs a trace:<file>[@<profile>] device, not '" + options.spec + "'");
  switch (spec.backend) {
    case DeviceSpec::Backend::cpu: {
      DeviceInfo info;
      info.kind = "cpu";
      const unsigned threads = options.device_threads == 0 ? kernels::ThreadPool::default_workers() : options.device_threads;
      info.name = "CPU, " + std::to_string(threads) + " device threads";
      info.modelled = false;
      info.computes_results = true;
      info.memory_budget_bytes = options.memory_budget_bytes;
      return make_queue_device(options, std::move(info), ExecutionModel{});
    }
    case DeviceSpec::Backend::sim: {
      const std::filesystem::path dir = options.profiles_dir.empty() ? default_profiles_dir() : options.profiles_dir;
      std::shared_ptr<MeasuredOpTimes> measured;
      if (!spec.trace_file.empty()) measured = load_trace_op_times(spec.trace_file, options.op_map, dir);
      SimProfile profile = load_sim_profile(measured && spec.profile.empty() ? measured->suggested_profile : spec.profile, dir);
      profile.measured = measured;
      DeviceInfo info;
      info.kind = measured ? "trace:" + spec.trace_file + "@" + profile.name : "sim:" + profile.name;
      info.measured_op_times = measured;
      const bool virtual_clock = options.clock == ClockMode::virtual_time;
      info.name = profile.display_name +
                  (measured ? " (trace: op times MEASURED in " + spec.trace_file + " where it has the op, else the "
                              "roofline; "
                            : " (sim: op times are MODELLED by a roofline, not measured; ") +
                  (virtual_clock ? "virtual clock" : "real clock") +
                  std::string(options.verify ? "; results computed on the CPU for verification)"
                                             : "; kernel results are NOT computed, no tensor memory)");
      info.modelled = true;
      info.computes_results = options.verify;
      info.materialized = options.verify;
      info.host_visible_memory = options.verify;
      info.clock = std::string(to_string(options.clock));
      info.memory_budget_bytes = options.memory_budget_bytes != 0
                                     ? options.memory_budget_bytes
                                     : static_cast<std::uint64_t>(profile.memory_bytes.value);
      info.peak_flops_per_s = profile.roofline_flops_per_s();
      info.mem_bytes_per_s = profile.mem_bytes_per_s.value;
      info.profile_source = profile.path.string() + ": peak " + profile.roofline_peak + " from " +
                            (profile.roofline_peak == "fp32" ? profile.peak_fp32_flops_per_s.source
                                                             : profile.peak_fp16_flops_per_s.source) +
                            "; memory bandwidth from " + profile.mem_bytes_per_s.source;
      if (virtual_clock) {
        DeviceOptions virtual_options = options;
        if (virtual_options.host_time == HostTime::model && !virtual_options.host_model) {
          // A user's profile folder without host-models/ still gets the shipped default.
          const std::string file = std::string(kDefaultHostModel) + ".json";
          const auto model_dir = std::filesystem::is_regular_file(dir / "host-models" / file) ? dir : default_profiles_dir();
          virtual_options.host_model =
              std::make_shared<const HostModel>(load_host_model(std::string(kDefaultHostModel), model_dir));
        }
        return make_virtual_sim_device(virtual_options, std::move(info), std::move(profile));
      }
      ExecutionModel model;
      model.modelled = true;
      model.run_bodies = options.verify;
      model.profile = std::move(profile);
      return make_queue_device(options, std::move(info), std::move(model));
    }
    case DeviceSpec::Backend::cuda: {
      // The backend is a module opened now (harness/device/cuda_module.hpp); a build without
      // CUDA, or a missing module or CUDA library, is one line naming the device.
      using MakeCudaDevice = Device* (*)(const DeviceOptions&, int);
      MakeCudaDevice make = nullptr;
      try {
        make = reinterpret_cast<MakeCudaDevice>(cuda_module_symbol("encbench_cuda_make_device"));
      } catch (const InvalidInput& e) {
        throw InvalidInput("device '" + options.spec + "': " + e.what());
      }
      return std::unique_ptr<Device>(make(options, spec.cuda_index));
    }
  }
  throw InvalidInput("unknown device '" + options.spec + "'");
}

}  // namespace encbench::device

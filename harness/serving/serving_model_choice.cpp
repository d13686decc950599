#include "harness/serving/serving_model_choice.hpp"

#include <string_view>
#include <system_error>

#include "harness/device/sim_profile.hpp"

namespace encbench::serving {

ServingModelChoice choose_serving_model(const std::string& requested, const std::string& device,
                                        const std::string& model, const std::filesystem::path& profiles_dir) {
  if (requested == kRooflineServingModel) return {{}, "--serving-model roofline"};
  if (!requested.empty()) return {requested, "asked for"};
  // Plain sim:<profile> only: a trace: device takes its op times from a measured trace, cpu and
  // cuda run the encoder for real, and no calibration was made for them.
  constexpr std::string_view kSim = "sim:";
  if (!device.starts_with(kSim)) return {{}, "no calibrated serving model for device " + device};
  const std::string profile = device.substr(kSim.size());
  // A model given as a path (dir/name.json) is looked up by its name.
  std::string name = std::filesystem::path(model).filename().string();
  if (name.size() > 5 && name.ends_with(".json")) name.resize(name.size() - 5);
  const std::string file_name = profile + "-" + name + ".json";
  for (const std::filesystem::path& profiles : {profiles_dir, device::default_profiles_dir()}) {
    if (profiles.empty()) continue;
    const std::filesystem::path candidate = profiles.parent_path() / "serving" / file_name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(candidate, ec)) return {candidate, "calibrated default for " + device + " and " + name};
  }
  return {{}, "none shipped for " + device + " and " + name};
}

std::string describe(const ServingModelChoice& choice) {
  if (choice.file.empty()) return std::string(kRooflineServingModel) + " (" + choice.why + ")";
  return choice.file.string() + " (" + choice.why + ")";
}

}  // namespace encbench::serving

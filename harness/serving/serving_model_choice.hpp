// Which serving model a command with a device and a model runs: the calibrated one the project
// ships for that device and model (scenarios/serving/<profile>-<model>.json) unless the user asks
// for another file or for the LM roofline alone.
#pragma once

#include <filesystem>
#include <string>

namespace encbench::serving {

// The --serving-model word (and scenario value) that asks for the LM roofline of the model on the
// device profile alone, not the calibrated serving model the project ships.
inline constexpr const char* kRooflineServingModel = "roofline";

struct ServingModelChoice {
  std::filesystem::path file;  // "" = the LM roofline alone
  std::string why;             // "calibrated default for sim:P and M", "asked for", "none shipped ..."
};

// The serving model for `requested` (a --serving-model value or a scenario's serving_model):
// "roofline" = none; any other non-empty value = that file; "" = the calibrated one the project
// ships for a plain sim:<profile> device and the model (<scenarios>/serving/<profile>-<model>.json,
// scenarios being the parent of profiles_dir, else of the shipped profiles folder), none when
// none is shipped.
ServingModelChoice choose_serving_model(const std::string& requested, const std::string& device,
                                        const std::string& model, const std::filesystem::path& profiles_dir);

// One phrase for a command's first line: "scenarios/serving/x.json (calibrated default for ...)".
std::string describe(const ServingModelChoice& choice);

}  // namespace encbench::serving

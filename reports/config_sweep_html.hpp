#pragma once
// The configuration sweep's page (`encbench bench sweep serve`, `encbench run --grid`): the
// winners by load first, then the two Pareto fronts (output tokens/s per device against tokens/s
// per user, each point a configuration at a load; capacity at the SLO against TTFT at the lightest
// load, each point a configuration), each configuration's load curve, start-up times, and the
// table of every configuration at every load with its verdict against the best. Drawn from an
// encbench-config-sweep result; self-contained (inline SVG, the report's style sheet, no scripts).
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace encbench::reports {

std::string render_config_sweep_html(const nlohmann::json& sweep);
void write_config_sweep_html(const std::filesystem::path& path, const nlohmann::json& sweep);

}  // namespace encbench::reports

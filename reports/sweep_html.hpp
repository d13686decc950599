#pragma once
// The sweep page (`encbench run --sweep ... --slo ...`): verdict first (each arm's capacity at the
// SLO and B's gain), then latency percentiles and throughput against offered load per arm with the
// knee and the SLO line marked, TPOT against throughput (the Pareto view), and the points' table.
// Self-contained: inline SVG, the report's style sheet, no scripts.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace encbench::reports {

std::string render_sweep_html(const nlohmann::json& sweep);  // an encbench-sweep result
void write_sweep_html(const std::filesystem::path& path, const nlohmann::json& sweep);

}  // namespace encbench::reports

#pragma once
// `encbench run --clock virtual --plot-timeline`: vLLM's per-request timeline (bench serve
// --plot-timeline: a TTFT band, then ITL bands coloured by thresholds, one row per request) as a
// self-contained HTML page with inline SVG, per arm; above it the engine's steps (encoder part and
// LM part), and each request's TTFT broken down: client queue -> engine queue -> the encoder step
// that encoded its image (device busy, device idle by gap cause, host) -> prefill and the rest.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/virtual_experiment.hpp"

namespace encbench::scenario {

struct TimelineOptions {
  std::vector<double> itl_thresholds_ms{25, 50};  // vLLM's defaults
  std::size_t max_requests = 200;                 // rows drawn per arm (the breakdown uses all)
};

// Per arm: the mean TTFT breakdown (ms) over its requests; also what the page shows.
nlohmann::json ttft_breakdown(const ArmSeed& arm);
void write_timeline_html(const std::filesystem::path& path, const std::vector<std::string>& presets,
                         const std::vector<ArmSeed>& arms, const TimelineOptions& options);

}  // namespace encbench::scenario

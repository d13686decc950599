#pragma once
// The per-request timeline page: vLLM's `bench serve --plot-timeline` (a TTFT band, then ITL bands
// coloured by thresholds, one row per request) as a self-contained HTML page with inline SVG, one
// chart per arm; above it the engine's steps (encoder part and LM part), and each request's TTFT
// broken down: client queue -> to the server -> body and image decode -> engine queue -> the
// encoder step that encoded its image (device busy, device idle by gap cause, host) -> prefill and
// the rest.
//
// One drawing for two sources of plain data (TimelineArm): `encbench run --clock virtual
// --plot-timeline` (the virtual loop's steps and traces, timeline_arm_of) and `bench serve
// --profile --plot-timeline` against `encbench serve` (the engine timeline of its /stop_profile
// answer, live_timeline_arm). Without engine data the page says why and still draws the requests.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/bench.hpp"
#include "harness/client/records.hpp"
#include "harness/scenario/virtual_experiment.hpp"

namespace encbench::scenario {

struct TimelineOptions {
  std::vector<double> itl_thresholds_ms{25, 50};  // vLLM's defaults
  std::size_t max_requests = 200;                 // rows drawn per arm (the breakdown uses all)
};

// One engine step, on the records' clock.
struct TimelineStep {
  Nanos start_ns = 0;
  Nanos encoder_start_ns = 0;   // the encoder part starts here (virtual clock: at start_ns)
  Nanos encoder_ns = 0;         // encoder part: forward and host pre-processing (0: no images)
  Nanos encoder_busy_ns = 0;    // device busy inside it
  std::map<std::string, Nanos> encoder_idle_by_class;  // device idle inside it, by gap cause
  Nanos lm_ns = 0;              // LM part, right after the encoder part
};

// What the engine did with one request, on the records' clock.
struct TimelineRequestTrace {
  bool known = false;               // false: the engine has no record of it
  Nanos server_arrival_ns = 0;      // its header reached the server (0: at dispatch, virtual clock)
  Nanos engine_submit_ns = 0;       // parsed and decoded, handed to the engine (0: at arrival)
  Nanos first_scheduled_ns = 0;
  std::int64_t encoder_step = -1;   // index into TimelineArm::steps (-1: none or not recorded)
  Nanos api_server_done_ns = 0;     // virtual clock: left the modelled API-server stage (0: no stage)
};

struct TimelineArm {
  std::string label;
  std::string clock;                // page heading: "virtual clock, seed 3", "live run", ...
  std::vector<client::RequestRecord> records;
  Nanos start_ns = 0, end_ns = 0;
  std::vector<TimelineStep> steps;
  std::vector<TimelineRequestTrace> traces;  // empty, or one per record
  std::vector<std::string> notes;   // shown above the chart: overlay unavailable, partial, clock
};

TimelineArm timeline_arm_of(const std::string& label, const ArmSeed& arm);
// A `bench serve` run; its server_profile's engine timeline (when there is one) matched to the
// records by x-request-id.
TimelineArm live_timeline_arm(const std::string& label, const client::BenchResult& result);

// One request's TTFT components in ms ("ttft" and "client_queue" besides; the others add up to
// ttft). Empty for a request without a first token.
std::map<std::string, double> ttft_components(const TimelineArm& arm, std::size_t request);
// The mean of each component over the requests that have one.
nlohmann::json ttft_breakdown(const TimelineArm& arm);
nlohmann::json ttft_breakdown(const ArmSeed& arm);

void write_timeline_html(const std::filesystem::path& path, const std::vector<TimelineArm>& arms,
                         const TimelineOptions& options);
void write_timeline_html(const std::filesystem::path& path, const std::vector<std::string>& presets,
                         const std::vector<ArmSeed>& arms, const TimelineOptions& options);

}  // namespace encbench::scenario

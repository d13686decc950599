#pragma once
// Profiler traces a live A/B round's server wrote into the round's directory (point the server's
// profiler there with the {round_dir} placeholder: vLLM's VLLM_TORCH_PROFILER_DIR, torch_npu's
// output, encbench serve's --profile-dir), each run through the project's idle-gap analysis
// (harness/trace: device busy / idle and idle by cause), so the A/B shows the device's idle gaps
// beside its TTFT change. What cannot be read is noted per file, never fatal.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

// Trace files under `dir` (recursively, sorted, at most `max_files`): *.trace.json,
// *.pt.trace.json and their .gz, torch_npu's trace_view.json.
std::vector<std::filesystem::path> find_round_traces(const std::filesystem::path& dir, std::size_t max_files = 16);

// [{file, layout, devices: [{device, label, busy_ms, idle_ms, idle_pct, ops, idle_ms_by_class}]}
//  or {file, error}] for every trace find_round_traces finds.
nlohmann::json analyze_round_traces(const std::filesystem::path& dir);

// Sums per arm over its rounds' analyses: {traces, busy_ms, idle_ms, idle_pct, idle_ms_by_class}.
nlohmann::json sum_trace_analyses(const std::vector<nlohmann::json>& per_round);

// `trace diff` (harness/trace/trace_diff.hpp) between the two arms, round by round: of each
// round, the first trace the idle-gap analysis read (`traces_a[r]`, `traces_b[r]`: analyze_round_traces
// of round r), summarised per forward and compared; the per-forward metrics are then averaged over
// the rounds both arms have a trace for. Returns
//   {rounds: [{round, a, b, metrics: {name: {a, b}}, op_changes: [{name, count_a, count_b, time_a_us,
//              time_b_us}] (largest 8), workload_warning?} | {round, error}],
//    rounds_diffed, mean: {name: {a, b, delta}}, note?}
// A round without a trace in one arm, or a trace the replay model cannot read, is noted, not fatal.
nlohmann::json diff_arm_traces(const std::map<int, nlohmann::json>& traces_a, const std::map<int, nlohmann::json>& traces_b);

}  // namespace encbench::scenario

#pragma once
// --plot-dataset-stats (vLLM's generate_dataset_stats_plot): one self-contained HTML page of inline
// SVG charts of the run's requests: prompt tokens, output tokens and their sum (histograms, 30
// bins as vLLM's), tokens per request (prompt, prompt + output), and, when the requests carried
// images, image count and bytes per request. vLLM writes a PNG next to the result JSON
// (Path(result).with_suffix(".dataset_stats.png")); this is the same name ending in .html.
#include <filesystem>

#include "harness/client/bench.hpp"

namespace encbench::cli {

// vLLM's name: the result file's path with its last suffix replaced by ".dataset_stats.html".
std::filesystem::path dataset_stats_path(const client::BenchConfig& config, const client::BenchResult& result);

// Writes the page; the data (vLLM's input_lens and output_lens, per-request image counts and
// bytes) is also embedded as JSON (<script id="dataset-stats" type="application/json">).
void write_dataset_stats_html(const std::filesystem::path& path, const client::BenchConfig& config,
                              const client::BenchResult& result);

}  // namespace encbench::cli

#pragma once
// --plot-dataset-stats (vLLM's generate_dataset_stats_plot): vLLM's PNG, the same name
// (Path(result).with_suffix(".dataset_stats.png")) and panels (harness/raster/dataset_stats_figure.hpp),
// from the run's input_lens and output_lens. When the requests carried images, a second file,
// <result name>.dataset_stats.html, adds what vLLM's figure lacks: image count and image bytes per
// request (inline SVG, the data embedded as JSON).
#include <filesystem>

#include "harness/client/bench.hpp"

namespace encbench::cli {

// --plot-dataset-stats after a run: the PNG, vLLM's "Dataset statistics plot saved to: PATH" on
// stdout, and for image requests the image page (its path on stderr).
void write_dataset_stats(const client::BenchConfig& config, const client::BenchResult& result);

// vLLM's name: the result file's path with its last suffix replaced by ".dataset_stats.png".
std::filesystem::path dataset_stats_path(const client::BenchConfig& config, const client::BenchResult& result);
// The image page's name: the same with ".dataset_stats.html".
std::filesystem::path dataset_images_path(const client::BenchConfig& config, const client::BenchResult& result);

// Writes the PNG (the result's input_lens and output_lens); InvalidInput naming the path when it
// cannot be written.
void write_dataset_stats_png(const std::filesystem::path& path, const client::BenchResult& result);

// Whether any request carried an image (the image page is only written then).
bool dataset_has_images(const client::BenchResult& result);
// Writes the image page; the data (vLLM's input_lens and output_lens, per-request image counts and
// bytes) is also embedded as JSON (<script id="dataset-stats" type="application/json">).
void write_dataset_stats_html(const std::filesystem::path& path, const client::BenchConfig& config,
                              const client::BenchResult& result);

}  // namespace encbench::cli

#include "harness/cli/bench_dataset_stats.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/core/error.hpp"
#include "harness/imaging/decode.hpp"
#include "harness/raster/dataset_stats_figure.hpp"
#include "reports/svg.hpp"

namespace encbench::cli {

namespace {

using reports::svg::LineChart;
using reports::svg::Series;

// A histogram of `values` in `bins` equal bins (numpy/matplotlib: [min, max], the last bin closed),
// drawn as a step line: (bin left edge, count) and a closing point at the right edge.
Series histogram(const std::string& name, const std::vector<double>& values, int bins, const std::string& colour) {
  Series s;
  s.name = name;
  s.step = true;
  s.colour = colour;
  if (values.empty()) return s;
  double lo = *std::min_element(values.begin(), values.end()), hi = *std::max_element(values.begin(), values.end());
  if (!(hi > lo)) {  // numpy: a single value spans [v - 0.5, v + 0.5]
    lo -= 0.5;
    hi += 0.5;
  }
  std::vector<double> counts(static_cast<std::size_t>(bins), 0.0);
  const double width = (hi - lo) / bins;
  for (double v : values) {
    auto k = static_cast<std::size_t>((v - lo) / width);
    counts[std::min(k, counts.size() - 1)] += 1;
  }
  s.points.emplace_back(lo, 0.0);
  for (int k = 0; k < bins; ++k) s.points.emplace_back(lo + k * width, counts[static_cast<std::size_t>(k)]);
  s.points.emplace_back(hi, 0.0);
  return s;
}

std::string histogram_chart(const std::string& id, const std::string& title, const std::string& x_label,
                            const std::vector<double>& values, const std::string& colour) {
  LineChart chart(id, title, x_label, "Count");
  chart.add(histogram(x_label, values, 30, colour));
  return chart.svg();
}

// vLLM's bottom-right panel: tokens per request, prompt below and output stacked on it.
std::string per_request_chart(const std::vector<double>& prompt, const std::vector<double>& output) {
  LineChart chart("dataset-per-request", "Tokens per request", "Request index", "Tokens");
  Series p{"Prompt tokens", {}, true, "#1f77b4", {}, false};
  Series t{"Prompt + output tokens", {}, true, "#ff7f0e", {}, false};
  for (std::size_t i = 0; i < prompt.size(); ++i) {
    p.points.emplace_back(static_cast<double>(i), prompt[i]);
    t.points.emplace_back(static_cast<double>(i), prompt[i] + output[i]);
  }
  chart.add(std::move(t));
  chart.add(std::move(p));
  return chart.svg();
}

std::vector<double> as_doubles(const std::vector<std::int64_t>& v) { return {v.begin(), v.end()}; }

}  // namespace

std::filesystem::path dataset_stats_path(const client::BenchConfig& config, const client::BenchResult& result) {
  return client::result_sibling_path(config, result, ".dataset_stats.png");
}

std::filesystem::path dataset_images_path(const client::BenchConfig& config, const client::BenchResult& result) {
  return client::result_sibling_path(config, result, ".dataset_stats.html");
}

void write_dataset_stats_png(const std::filesystem::path& path, const client::BenchResult& result) {
  const auto figure = raster::draw_dataset_stats(result.metrics.input_lens, result.metrics.output_lens);
  const std::string png = imaging::encode_png(figure.canvas.rgb().data(), figure.canvas.width(), figure.canvas.height(), 3);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  require(static_cast<bool>(out), "--plot-dataset-stats: cannot write " + path.string());
  out.write(png.data(), static_cast<std::streamsize>(png.size()));
  require(static_cast<bool>(out), "--plot-dataset-stats: cannot write " + path.string());
}

void write_dataset_stats(const client::BenchConfig& config, const client::BenchResult& result) {
  if (result.metrics.input_lens.empty() || result.metrics.output_lens.empty()) {  // vLLM warns and goes on
    std::cerr << "encbench: warning: Dataset statistics plot requires input and output length data. "
                 "Ensure the benchmark completed successfully.\n";
    return;
  }
  const auto path = dataset_stats_path(config, result);
  write_dataset_stats_png(path, result);
  std::cout << "Dataset statistics plot saved to: " << path.string() << "\n";  // vLLM's line
  if (dataset_has_images(result)) {  // beyond vLLM: what its figure lacks for image requests
    const auto page = dataset_images_path(config, result);
    write_dataset_stats_html(page, config, result);
    std::cerr << "encbench: image statistics written to " << page.string() << "\n";
  }
}

bool dataset_has_images(const client::BenchResult& result) {
  return std::any_of(result.image_counts.begin(), result.image_counts.end(), [](std::size_t n) { return n > 0; });
}

void write_dataset_stats_html(const std::filesystem::path& path, const client::BenchConfig& config,
                              const client::BenchResult& result) {
  const auto& m = result.metrics;
  const std::vector<double> prompt = as_doubles(m.input_lens), output = as_doubles(m.output_lens);
  std::vector<double> total(prompt.size()), image_count, image_kb;
  for (std::size_t i = 0; i < prompt.size(); ++i) total[i] = prompt[i] + (i < output.size() ? output[i] : 0.0);
  bool images = false;
  for (const auto& rec : result.run.records) {
    if (!rec.dispatched) continue;  // vLLM's arrays cover the requests sent
    const std::size_t bytes = rec.index < result.image_bytes.size() ? result.image_bytes[rec.index] : 0;
    const std::size_t count = rec.index < result.image_counts.size() ? result.image_counts[rec.index] : 0;
    images = images || count > 0;
    image_count.push_back(static_cast<double>(count));
    image_kb.push_back(static_cast<double>(bytes) / 1024.0);
  }
  const nlohmann::json data = {{"input_lens", m.input_lens}, {"output_lens", m.output_lens},
                               {"image_counts", image_count}, {"image_kib", image_kb},
                               {"dataset", config.dataset.name}, {"model_id", result.model_id}};
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path, std::ios::trunc);
  require(static_cast<bool>(out), "--plot-dataset-stats: cannot write " + path.string());
  out << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Dataset statistics</title>\n<style>"
         "body{font-family:sans-serif;margin:16px} .ctitle{font-weight:bold;font-size:14px} .grid{stroke:#e5e5e5}"
         ".tick{font-size:11px;fill:#555} .axis{font-size:12px} .frame{fill:none;stroke:#999}"
         ".legend{font-size:11px}</style></head><body>\n";
  out << "<h1>Dataset statistics: " << reports::svg::esc(config.dataset.name) << ", " << prompt.size()
      << " requests</h1>\n<p>vLLM's --plot-dataset-stats panels (prompt tokens, output tokens as received, their "
         "sum, tokens per request)" << (images ? ", then images per request" : "") << ".</p>\n";
  out << histogram_chart("dataset-prompt", "Prompt Tokens Distribution", "Prompt Tokens", prompt, "#1f77b4") << "\n";
  out << histogram_chart("dataset-output", "Output Tokens Distribution", "Output Tokens", output, "#ff7f0e") << "\n";
  out << histogram_chart("dataset-total", "Prompt + Output Tokens Distribution", "Total Tokens", total, "#2ca02c") << "\n";
  out << per_request_chart(prompt, output) << "\n";
  if (images) {
    out << histogram_chart("dataset-image-count", "Images per Request", "Images", image_count, "#9467bd") << "\n";
    out << histogram_chart("dataset-image-bytes", "Image Data per Request", "Image data URL KiB", image_kb, "#8c564b") << "\n";
  }
  // Escape "</" so the JSON cannot end the script element early.
  std::string json = data.dump();
  for (std::size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 2)) json.replace(at, 2, "<\\/");
  out << "<script id=\"dataset-stats\" type=\"application/json\">" << json << "</script>\n</body></html>\n";
  require(static_cast<bool>(out), "--plot-dataset-stats: cannot write " + path.string());
}

}  // namespace encbench::cli

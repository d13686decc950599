#include "harness/scenario/dataset_stats.hpp"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <limits>
#include <optional>
#include <ostream>
#include <sstream>

#include "harness/client/dataset.hpp"
#include "harness/client/image.hpp"
#include "harness/core/base64.hpp"
#include "harness/core/error.hpp"
#include "harness/core/result_json.hpp"
#include "harness/core/stats.hpp"
#include "harness/device/sim_profile.hpp"
#include "harness/imaging/decode.hpp"
#include "harness/server/openai_request.hpp"
#include "harness/vision/vision_geometry.hpp"

namespace encbench::scenario {
namespace {

// Width and height from an image's header; nullopt (with a count of skips) when it is not one
// of the accepted formats or is broken.
std::optional<std::pair<std::int64_t, std::int64_t>> header_size(std::string_view bytes) {
  try {
    const imaging::ImageInfo info =
        imaging::read_info(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    return std::make_pair(static_cast<std::int64_t>(info.width), static_cast<std::int64_t>(info.height));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The first `limit` bytes of a file: an image's header is near its start (JPEG: after its APP
// segments; PNG: IHDR; WebP: VP8 header), so a folder of 12 MP photos is read in kilobytes.
std::string read_prefix(const std::filesystem::path& p, std::size_t limit) {
  std::ifstream in(p, std::ios::binary);
  std::string bytes(limit, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(limit));
  bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  return bytes;
}

// Width and height of an image file: from its first 256 KiB, else (a header beyond that, e.g.
// large EXIF or ICC segments; a PNG whose chunk walk needs the whole file) from the whole file up
// to kMaxHeaderFile.
std::optional<std::pair<std::int64_t, std::int64_t>> file_header_size(const std::filesystem::path& p) {
  constexpr std::size_t kPrefix = 256 << 10, kMaxHeaderFile = 256u << 20;
  if (auto size = header_size(read_prefix(p, kPrefix))) return size;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(p, ec);
  if (ec || bytes <= kPrefix || bytes > kMaxHeaderFile) return std::nullopt;
  return header_size(read_prefix(p, static_cast<std::size_t>(bytes)));
}

struct Collected {
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  std::vector<double> text_tokens;
  std::size_t rows = 0, skipped = 0;
};

Collected from_folder(const std::filesystem::path& dir) {
  Collected c;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    ++c.rows;
    const auto size = file_header_size(f);
    if (size) c.sizes.push_back(*size);
    else ++c.skipped;
  }
  return c;
}

Collected from_rows(const std::filesystem::path& file) {
  client::DatasetConfig dc;
  dc.name = "hf";
  dc.path = file.string();
  // Every row in file order (no shuffle, no oversampling: all the file has), images as their own
  // bytes: only their headers are read here, never a decode and JPEG re-encode per image.
  dc.num_prompts = std::numeric_limits<std::size_t>::max();
  dc.shuffle = false;
  dc.oversample = false;
  dc.transcode_images = false;
  const client::Dataset ds = client::load_dataset(dc);
  Collected c;
  for (const auto& s : ds.samples) {
    ++c.rows;
    c.text_tokens.push_back(static_cast<double>(std::max<std::int64_t>(1, server::approx_text_tokens(s.prompt))));
    if (s.image_urls.empty()) continue;
    const std::string& url = s.image_urls.front();  // vLLM sends images[0]
    const auto comma = url.find(',');
    std::string bytes;
    if (url.rfind("data:", 0) == 0 && comma != std::string::npos && base64_decode(url.substr(comma + 1), Base64Form::lenient, bytes)) {
      const auto size = header_size(bytes);
      if (size) {
        c.sizes.push_back(*size);
        continue;
      }
    }
    ++c.skipped;
  }
  return c;
}

double percentile_of(std::vector<double> xs, double q) {
  std::sort(xs.begin(), xs.end());
  return stats::percentile_sorted(xs, q);
}

}  // namespace

WorkloadModel dataset_stats(const DatasetStatsOptions& o, std::ostream& out) {
  require(std::filesystem::exists(o.input), "dataset stats: " + o.input.string() + " does not exist");
  const Collected c = std::filesystem::is_directory(o.input) ? from_folder(o.input) : from_rows(o.input);
  require(!c.sizes.empty(), "dataset stats: " + o.input.string() + ": no readable JPEG, PNG or WebP image in " +
                                std::to_string(c.rows) + " rows/files (" + std::to_string(c.skipped) + " skipped)");
  // The shipped base workload is found from any working directory (scenarios/ of the project).
  std::filesystem::path base = o.base_workload;
  if (!base.empty() && base.is_relative() && !std::filesystem::exists(base))
    base = device::default_profiles_dir().parent_path() / "workloads" / base.filename();
  WorkloadModel m = base.empty() ? WorkloadModel{} : load_workload(base);
  m.name = o.input.filename().string();
  m.image_sizes = c.sizes;
  // The client samples these rows, not the base's: past them it sends duplicates (workload.hpp).
  m.dataset_rows = static_cast<std::int64_t>(c.rows);
  m.dataset_rows_source = "encbench dataset stats: the rows/files of " + o.input.string();
  if (!c.text_tokens.empty()) {
    m.text_tokens.kind = ScalarDistribution::Kind::empirical;
    m.text_tokens.values = c.text_tokens;
    m.text_tokens.source = "encbench dataset stats: the server's token estimate of each row's question";
  }
  std::ostringstream d;
  d << "encbench dataset stats --dataset " << o.input.string() << ": " << c.sizes.size() << " image sizes from "
    << c.rows << " rows/files (" << c.skipped << " without a readable JPEG/PNG/WebP image)"
    << (c.text_tokens.empty() ? "; text and outputs from " + o.base_workload.string()
                               : "; text tokens per row; outputs and template from " + o.base_workload.string());
  m.derivation = d.str();
  // What the model would see of these images.
  const vision::VisionGeometry g = vision::vision_geometry_for(o.model);
  std::vector<double> pixels, tokens;
  for (const auto& [w, h] : c.sizes) {
    pixels.push_back(static_cast<double>(w * h));
    tokens.push_back(static_cast<double>(vision::image_token_count(g, vision::image_grid(g, h, w))));
  }
  out << "rows/files: " << c.rows << ", images read: " << c.sizes.size() << ", skipped: " << c.skipped << "\n"
      << std::fixed << std::setprecision(0) << "pixels per image: mean " << stats::mean(pixels) << ", median "
      << percentile_of(pixels, 50) << ", p90 " << percentile_of(pixels, 90) << ", max " << percentile_of(pixels, 100) << "\n"
      << o.model << " image tokens: mean " << stats::mean(tokens) << ", median " << percentile_of(tokens, 50) << ", p90 "
      << percentile_of(tokens, 90) << ", max " << percentile_of(tokens, 100) << "\n";
  if (!c.text_tokens.empty())
    out << "text tokens (estimate): mean " << std::setprecision(1) << stats::mean(c.text_tokens) << ", median "
        << percentile_of(c.text_tokens, 50) << ", p99 " << percentile_of(c.text_tokens, 99) << "\n";
  nlohmann::json doc = to_json(m);
  write_json_file(o.out, doc);
  out << "wrote " << o.out.string() << " (use: encbench run --clock virtual --workload " << o.out.string() << ")\n";
  return m;
}

}  // namespace encbench::scenario

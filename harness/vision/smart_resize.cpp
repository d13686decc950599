#include "harness/vision/smart_resize.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "harness/core/error.hpp"

namespace encbench::vision {

ResizedSize smart_resize(long long height, long long width, long long factor, long long min_pixels,
                         long long max_pixels) {
  // transformers' rules (models/qwen2_vl/image_processing_qwen2_vl.py): no minimum side (older
  // releases refused sides below the factor), the aspect ratio at most 200, and one factor as the
  // floor of a side only where scaling down could make it 0. Non-positive sizes and limits, which
  // Python would answer with ZeroDivisionError or a zero side, are refused by name.
  require(height > 0 && width > 0, "image size must be positive, got " + std::to_string(width) + "x" +
                                       std::to_string(height) + " (width x height)");
  require(factor > 0 && min_pixels > 0 && max_pixels >= min_pixels,
          "smart_resize needs factor > 0 and 0 < min_pixels <= max_pixels");
  const double ratio = static_cast<double>(std::max(height, width)) /
                       static_cast<double>(std::min(height, width));
  require(ratio <= kMaxAspectRatio, "image " + std::to_string(width) + "x" + std::to_string(height) +
                                        ": absolute aspect ratio must be smaller than 200, got " +
                                        std::to_string(ratio));
  const double h = static_cast<double>(height), w = static_cast<double>(width),
               f = static_cast<double>(factor);
  // std::nearbyint in the default rounding mode rounds half to even, like Python's round().
  long long h_bar = static_cast<long long>(std::nearbyint(h / f)) * factor;
  long long w_bar = static_cast<long long>(std::nearbyint(w / f)) * factor;
  if (h_bar * w_bar > max_pixels) {
    const double beta = std::sqrt(h * w / static_cast<double>(max_pixels));
    h_bar = std::max(factor, static_cast<long long>(std::floor(h / beta / f)) * factor);
    w_bar = std::max(factor, static_cast<long long>(std::floor(w / beta / f)) * factor);
  } else if (h_bar * w_bar < min_pixels) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / (h * w));
    h_bar = static_cast<long long>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<long long>(std::ceil(w * beta / f)) * factor;
  }
  return {h_bar, w_bar};
}

}  // namespace encbench::vision

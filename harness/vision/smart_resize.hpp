#pragma once
// How an image's pixel size becomes the size the vision tower's preprocessor resizes it to:
// transformers' Qwen2-VL smart_resize and the input limits a Qwen processor applies around it.
namespace encbench::vision {

// PIL's decompression-bomb limit (2 * Image.MAX_IMAGE_PIXELS): larger inputs are rejected before
// resizing, as a Qwen processor fed through PIL would.
inline constexpr long long kMaxInputPixels = 2LL * 89'478'485;
// Qwen2-VL's limit on max(h, w) / min(h, w).
inline constexpr double kMaxAspectRatio = 200.0;

struct ResizedSize { long long height = 0, width = 0; };
// transformers' Qwen2-VL smart_resize, its current rules: round(h/f)*f (Python round: half to
// even), then scale down (floor, at least one factor) above max_pixels or up (ceil) below
// min_pixels. Throws InvalidInput for non-positive sizes, an aspect ratio above 200, or limits
// outside 0 < min_pixels <= max_pixels. The one smart_resize: the encoder's inputs and the
// server's geometry both use it.
ResizedSize smart_resize(long long height, long long width, long long factor, long long min_pixels,
                         long long max_pixels);

}  // namespace encbench::vision

#pragma once
// One image's or video's patch grid (temporal groups, height, width, in patches before merging) as
// the vision tower sees it: the encoder's inputs, the scheduler's images and the server's request
// images are all this one type.
namespace encbench::vision {

struct GridTHW {
  int t = 1, h = 0, w = 0;  // in patches
  long long patches() const { return static_cast<long long>(t) * h * w; }
  bool operator==(const GridTHW&) const = default;
};

// Tokens the language model receives for one grid: the patch merger turns each
// spatial_merge_size x spatial_merge_size block of patches into one token (t*h*w / merge^2).
// Throws InvalidInput when h or w is not a positive multiple of the merge size.
long long merged_tokens(const GridTHW& grid, int spatial_merge_size);

}  // namespace encbench::vision

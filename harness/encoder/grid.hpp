#pragma once
// One image's or video's patch grid (temporal groups, height, width, in patches before merging) as
// the vision tower sees it: the encoder's inputs, the scheduler's images and the server's request
// images are all this one type.
namespace encbench::encoder {

struct GridTHW {
  int t = 1, h = 0, w = 0;  // in patches
  long long patches() const { return static_cast<long long>(t) * h * w; }
  bool operator==(const GridTHW&) const = default;
};

}  // namespace encbench::encoder

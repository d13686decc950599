#pragma once
// One image's patch grid (temporal, height, width) as the vision tower sees it.
#include <cstdint>

namespace encbench::engine {

struct GridTHW {
  std::int64_t t = 1;
  std::int64_t h = 0;
  std::int64_t w = 0;
  std::int64_t patches() const { return t * h * w; }
  bool operator==(const GridTHW&) const = default;
};

}  // namespace encbench::engine

#include "harness/vision/grid.hpp"

#include <string>

#include "harness/core/error.hpp"

namespace encbench::vision {

long long merged_tokens(const GridTHW& g, int merge) {
  require(merge > 0 && g.t > 0 && g.h > 0 && g.w > 0 && g.h % merge == 0 && g.w % merge == 0,
          "grid (" + std::to_string(g.t) + "," + std::to_string(g.h) + "," + std::to_string(g.w) +
              ") must be positive with h, w multiples of spatial_merge_size " + std::to_string(merge));
  return g.patches() / (static_cast<long long>(merge) * merge);
}

}  // namespace encbench::vision

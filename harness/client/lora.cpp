#include "harness/client/lora.hpp"

#include "harness/core/error.hpp"

namespace encbench::client {

std::vector<std::string> assign_lora_modules(const std::vector<std::string>& modules, const std::string& assignment,
                                             std::size_t requests, std::uint64_t seed) {
  require(!modules.empty(), "--lora-modules needs at least one module name");
  require(assignment == "random" || assignment == "round-robin",
          "--lora-assignment must be random or round-robin, got '" + assignment + "'");
  std::vector<std::string> out;
  out.reserve(requests);
  if (assignment == "round-robin") {
    for (std::size_t i = 0; i < requests; ++i) out.push_back(modules[i % modules.size()]);
    return out;
  }
  PythonRandom rng(seed);
  for (std::size_t i = 0; i < requests; ++i) out.push_back(modules[rng.below(modules.size())]);
  return out;
}

}  // namespace encbench::client

#pragma once
// `encbench dataset stats`: a workload distribution file (workload.hpp) from a user's own rows: a
// vision-arena JSONL (or any layout the client loads) or a folder of images. Image sizes are read
// from the headers (harness/imaging, made for untrusted bytes); text tokens are the server's
// estimate of the question's tokens. The output replaces the shipped vision-arena distribution
// with `run --workload FILE`.
#include <filesystem>
#include <iosfwd>
#include <string>

#include "harness/scenario/workload.hpp"

namespace encbench::scenario {

struct DatasetStatsOptions {
  std::filesystem::path input;             // JSONL file or a folder of images
  std::filesystem::path out;               // workload JSON to write
  std::filesystem::path base_workload;     // what the data does not say (outputs, template): from here
  std::string model = "qwen3-vl-8b";       // for the image-token summary
};

// Throws InvalidInput naming the file for unreadable input or no usable rows.
WorkloadModel dataset_stats(const DatasetStatsOptions& options, std::ostream& out);

}  // namespace encbench::scenario

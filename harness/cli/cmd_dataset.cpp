// `encbench dataset generate`: a small vision-arena-layout sample with its own synthetic images.
#include <iostream>

#include "harness/cli/command.hpp"
#include "harness/client/dataset.hpp"
#include "harness/scenario/dataset_stats.hpp"

namespace encbench::cli {

void add_dataset_command(CLI::App& app, CommandContext& ctx) {
  auto* dataset = app.add_subcommand(
      "dataset", "Dataset tools (generate: synthetic vision-arena-layout samples; stats: a workload distribution from your rows)");
  dataset->require_subcommand(1);
  auto* gen = dataset->add_subcommand("generate", "Write a JSONL sample in a VisionArena layout with synthetic images");
  auto config = std::make_shared<client::GenerateConfig>();
  auto out_path = std::make_shared<std::string>();
  gen->add_option("--layout", config->layout, "vision-arena-bench | visionarena-chat | custom | custom_image")->capture_default_str();
  gen->add_option("--num", config->num, "Rows to write")->capture_default_str();
  gen->add_option("--out", *out_path, "Output JSONL file")->required();
  gen->add_option("--seed", config->seed, "Seed for prompts and images")->capture_default_str();
  gen->add_option("--width", config->width, "Image width")->capture_default_str();
  gen->add_option("--height", config->height, "Image height")->capture_default_str();
  gen->add_option("--image-format", config->image_format, "png | jpeg (as stored in the file)")->capture_default_str();
  gen->add_option("--image-ref", config->image_ref, "bytes (base64 in the row) | path (files in <out>_images/)")->capture_default_str();
  gen->callback([&ctx, config, out_path] {
    ctx.action = [config, out_path] {
      config->out = *out_path;
      const std::size_t rows = client::generate_dataset(*config);
      std::cout << "wrote " << rows << " rows (" << config->layout << ") to " << config->out.string() << "\n";
      return 0;
    };
  });

  auto* stats = dataset->add_subcommand(
      "stats", "Image sizes (from the headers) and question lengths of a vision-arena JSONL or an image folder, "
               "written as a workload distribution for `encbench run --clock virtual --workload FILE`");
  auto so = std::make_shared<scenario::DatasetStatsOptions>();
  so->base_workload = "scenarios/workloads/vision-arena-bench-v0.1.json";
  stats->add_option("--dataset", so->input, "A JSONL in a layout bench serve reads, or a folder of images")->required();
  stats->add_option("--out", so->out, "Workload JSON to write")->required();
  stats->add_option("--base-workload", so->base_workload,
                    "What the data does not give (output lengths, template tokens, and text for a folder) comes from "
                    "this workload file")
      ->capture_default_str();
  stats->add_option("--model", so->model, "Vision model whose image-token counts are summarised")->capture_default_str();
  stats->callback([&ctx, so] {
    ctx.action = [so] {
      (void)scenario::dataset_stats(*so, std::cout);
      return 0;
    };
  });
}

}  // namespace encbench::cli

// encbench-golden-export: runs one verification forward of a (tiny) preset on the cpu device and
// writes its weights, inputs and outputs for the PyTorch golden check (golden_check.py).
//
//   encbench-golden-export --model tiny-qwen2.5-vl --image 224x168 --image 252x140
//                          [--video FxWxH] [--preset optimized] [--seed 0] --out DIR
//
// Format (docs/encoder.md, "Golden check against PyTorch"): DIR/manifest.json plus one .npy file
// (format 1.0, '<f4', C order) per array: pixels [T, 3*tp*p*p]; weights in nn.Linear layout
// [out, in] (patch_embed.weight [hidden, 3*tp*p*p], blocks.L.{norm1,norm2}.{weight,bias},
// blocks.L.attn.{qkv,proj}.{weight,bias}, blocks.L.mlp.{fc1,fc2}.{weight,bias} with the gated
// MLP's fc1 = [gate; up], merger.{norm,fc1,fc2}.*, deepstack.K.{norm,fc1,fc2}.*); the device's
// outputs in the original token order: hidden.0 (patch embedding) .. hidden.DEPTH (after each
// block) [T, hidden], merged [T/4, out_hidden], deepstack_out.K [T/4, out_hidden].
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/encoder/encode_run.hpp"
#include "harness/encoder/encoder.hpp"

using namespace encbench;
using namespace encbench::encoder;
namespace fs = std::filesystem;

namespace {

void write_npy(const fs::path& path, const std::vector<float>& data, std::vector<std::size_t> shape) {
  std::size_t count = 1;
  for (auto d : shape) count *= d;
  require(count == data.size(), "export: " + path.string() + " has " + std::to_string(data.size()) +
                                    " values, shape says " + std::to_string(count));
  std::string dims;  // "a, b" or, for one dimension, "a," (a Python tuple)
  for (std::size_t i = 0; i < shape.size(); ++i) dims += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) dims += ",";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  require(out.good(), "export: cannot write " + path.string());
  out.write("\x93NUMPY\x01\x00", 8);
  const std::uint16_t len = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size() * sizeof(float)));
  require(out.good(), "export: short write to " + path.string());
}

int run(int argc, char** argv) {
  RunOptions o;
  o.model = "";
  o.device = "cpu";
  o.threads = 2;
  o.mlp = true;
  std::string preset_name = "optimized", out_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      require(i + 1 < argc, a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") o.model = value();
    else if (a == "--image") o.images.push_back(value());
    else if (a == "--video") o.videos.push_back(value());
    else if (a == "--preset") preset_name = value();
    else if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--out") out_dir = value();
    else throw InvalidInput("unknown argument '" + a + "' (see the header of tests/torch/export_golden.cpp)");
  }
  require(!o.model.empty() && !out_dir.empty(), "--model and --out are required");
  const ResolvedRun r = resolve(o);
  const ModelConfig& m = r.model;
  auto dev = make_run_device(r);
  EncoderConfig cfg;
  cfg.model = m;
  cfg.toggles = resolve_toggles(preset_name, {}).second;
  cfg.mlp = true;
  cfg.seed = o.seed;
  EncoderRunner runner(cfg, *dev);
  LayerSnapshots snaps;
  const ForwardReport report = runner.forward_with_snapshots(r.grids, snaps);

  fs::create_directories(out_dir);
  const fs::path dir(out_dir);
  const std::size_t T = static_cast<std::size_t>(r.plan.num_patches);
  const std::size_t hidden = static_cast<std::size_t>(m.hidden_size);
  const std::size_t merged = hidden * static_cast<std::size_t>(m.merge_unit());
  const std::size_t out = static_cast<std::size_t>(m.out_hidden_size);
  const std::size_t tokens = static_cast<std::size_t>(report.output_tokens);
  const HostWeights& w = runner.weights();
  const std::size_t patch_dim = static_cast<std::size_t>(w.patch_dim);
  write_npy(dir / "pixels.npy", make_pixels(r.plan.num_patches, w.patch_dim, cfg.seed), {T, patch_dim});
  write_npy(dir / "patch_embed.weight.npy", w.patch_w, {hidden, patch_dim});
  const std::size_t inter = static_cast<std::size_t>(m.intermediate_size);
  const std::size_t fc1_out = m.mlp_kind == MlpKind::silu_gated ? 2 * inter : inter;
  for (int l = 0; l < m.depth; ++l) {
    const auto& L = w.layers[static_cast<std::size_t>(l)];
    const std::string p = "blocks." + std::to_string(l) + ".";
    write_npy(dir / (p + "norm1.weight.npy"), L.norm1_gamma, {hidden});
    write_npy(dir / (p + "norm1.bias.npy"), L.norm1_beta, {hidden});
    write_npy(dir / (p + "norm2.weight.npy"), L.norm2_gamma, {hidden});
    write_npy(dir / (p + "norm2.bias.npy"), L.norm2_beta, {hidden});
    write_npy(dir / (p + "attn.qkv.weight.npy"), L.qkv_w, {3 * hidden, hidden});
    write_npy(dir / (p + "attn.qkv.bias.npy"), L.qkv_b, {3 * hidden});
    write_npy(dir / (p + "attn.proj.weight.npy"), L.proj_w, {hidden, hidden});
    write_npy(dir / (p + "attn.proj.bias.npy"), L.proj_b, {hidden});
    write_npy(dir / (p + "mlp.fc1.weight.npy"), L.fc1_w, {fc1_out, hidden});
    write_npy(dir / (p + "mlp.fc1.bias.npy"), L.fc1_b, {fc1_out});
    write_npy(dir / (p + "mlp.fc2.weight.npy"), L.fc2_w, {hidden, inter});
    write_npy(dir / (p + "mlp.fc2.bias.npy"), L.fc2_b, {hidden});
  }
  auto merger = [&](const std::string& p, const HostMergerWeights& M, std::size_t norm_dim) {
    write_npy(dir / (p + "norm.weight.npy"), M.norm_gamma, {norm_dim});
    write_npy(dir / (p + "norm.bias.npy"), M.norm_beta, {norm_dim});
    write_npy(dir / (p + "fc1.weight.npy"), M.fc1_w, {merged, merged});
    write_npy(dir / (p + "fc1.bias.npy"), M.fc1_b, {merged});
    write_npy(dir / (p + "fc2.weight.npy"), M.fc2_w, {out, merged});
    write_npy(dir / (p + "fc2.bias.npy"), M.fc2_b, {out});
  };
  merger("merger.", w.merger, hidden);
  for (std::size_t k = 0; k < w.deepstack.size(); ++k) merger("deepstack." + std::to_string(k) + ".", w.deepstack[k], merged);
  for (std::size_t s = 0; s < snaps.hidden.size(); ++s)
    write_npy(dir / ("hidden." + std::to_string(s) + ".npy"), snaps.hidden[s], {T, hidden});
  write_npy(dir / "merged.npy", snaps.merged, {tokens, out});
  for (std::size_t k = 0; k < snaps.deepstack.size(); ++k)
    write_npy(dir / ("deepstack_out." + std::to_string(k) + ".npy"), snaps.deepstack[k], {tokens, out});

  nlohmann::json manifest = {{"format", "encbench-golden/1"},
                             {"model", to_json(m)},
                             {"grid_thw", to_json(r.grids)},
                             {"preset", preset_name},
                             {"toggles", describe(cfg.toggles)},
                             {"seed", cfg.seed},
                             {"mlp", true},
                             {"num_patches", T},
                             {"output_tokens", tokens}};
  std::ofstream(dir / "manifest.json") << manifest.dump(2) << "\n";
  std::cout << "exported " << m.name << " (" << preset_name << "): " << T << " patches, " << tokens
            << " output tokens, " << m.depth << " layers -> " << out_dir << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InvalidInput& e) {
    std::cerr << "encbench-golden-export: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "encbench-golden-export: " << e.what() << "\n";
    return 1;
  }
}

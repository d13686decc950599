#pragma once
// The attention op's toggles: each independent, spelled the same in CLI flags (--seq-lens
// host-precomputed), JSON keys (snake_case: "seq_lens": "host-precomputed"), trace args and docs.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::encoder {

enum class SeqLensMode { d2h_per_layer, layer0_cache, value_cache, host_precomputed, device_cumulative };
enum class ScaleMode { per_call, init };
enum class PadDecision { per_call, init };
// none: no head-dim padding at all; only the fused kernel (native head_dim) can run unpadded.
enum class PadMethod { three_pads, stacked, weight_padded, none };
enum class OutBuffer { alloc_per_call, reuse };
enum class KernelKind { flash_unpad, fused_varlen };

std::string_view to_string(SeqLensMode v);  // "d2h-per-layer", ...
std::string_view to_string(ScaleMode v);
std::string_view to_string(PadDecision v);
std::string_view to_string(PadMethod v);
std::string_view to_string(OutBuffer v);
std::string_view to_string(KernelKind v);

// Parsers throw InvalidInput listing the valid values.
SeqLensMode parse_seq_lens(std::string_view s);
ScaleMode parse_scale(std::string_view s);
PadDecision parse_pad_decision(std::string_view s);
PadMethod parse_pad_method(std::string_view s);
OutBuffer parse_out_buffer(std::string_view s);
KernelKind parse_kernel(std::string_view s);

struct Toggles {
  SeqLensMode seq_lens = SeqLensMode::d2h_per_layer;
  ScaleMode scale = ScaleMode::per_call;
  PadDecision pad_decision = PadDecision::per_call;
  PadMethod pad_method = PadMethod::three_pads;
  OutBuffer out_buffer = OutBuffer::alloc_per_call;
  KernelKind kernel = KernelKind::flash_unpad;
  bool operator==(const Toggles&) const = default;
};

// "seq-lens=d2h-per-layer scale=per-call ..." (CLI spelling).
std::string describe(const Toggles& t);
nlohmann::json to_json(const Toggles& t);  // snake_case keys, CLI-spelled values
Toggles toggles_from_json(const nlohmann::json& j);

// Throws InvalidInput for combinations that cannot run (device-cumulative needs fused-varlen).
void validate(const Toggles& t);
bool is_valid(const Toggles& t);

// baseline | pr6448 | pr7104 | optimized (see docs/encoder.md for what each reproduces).
std::vector<std::string> preset_names();
Toggles preset(std::string_view name);  // throws InvalidInput listing the presets

// A preset with toggle overrides: "pr7104+seq-lens=d2h-per-layer+kernel=flash-unpad" (the CLI
// spelling of each toggle after a '+'). Throws InvalidInput naming the bad part.
Toggles parse_preset_spec(std::string_view spec);

// Per-flag overrides applied on top of a preset (empty = keep).
struct ToggleOverrides {
  std::optional<std::string> seq_lens, scale, pad_decision, pad_method, out_buffer, kernel;
};
Toggles apply_overrides(Toggles base, const ToggleOverrides& o);

// Every valid combination (the --sweep set), in a stable order.
std::vector<Toggles> all_valid_toggles();

}  // namespace encbench::encoder

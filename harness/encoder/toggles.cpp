#include "harness/encoder/toggles.hpp"

#include <array>
#include <utility>

#include "harness/core/error.hpp"

namespace encbench::encoder {

namespace {

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<SeqLensMode, 5> kSeqLens{{{SeqLensMode::d2h_per_layer, "d2h-per-layer"},
                                              {SeqLensMode::layer0_cache, "layer0-cache"},
                                              {SeqLensMode::value_cache, "value-cache"},
                                              {SeqLensMode::host_precomputed, "host-precomputed"},
                                              {SeqLensMode::device_cumulative, "device-cumulative"}}};
constexpr NameTable<ScaleMode, 2> kScale{{{ScaleMode::per_call, "per-call"}, {ScaleMode::init, "init"}}};
constexpr NameTable<PadDecision, 2> kPadDecision{
    {{PadDecision::per_call, "per-call"}, {PadDecision::init, "init"}}};
constexpr NameTable<PadMethod, 4> kPadMethod{{{PadMethod::three_pads, "three-pads"},
                                              {PadMethod::stacked, "stacked"},
                                              {PadMethod::weight_padded, "weight-padded"},
                                              {PadMethod::none, "none"}}};
constexpr NameTable<OutBuffer, 2> kOutBuffer{
    {{OutBuffer::alloc_per_call, "alloc-per-call"}, {OutBuffer::reuse, "reuse"}}};
constexpr NameTable<KernelKind, 2> kKernel{
    {{KernelKind::flash_unpad, "flash-unpad"}, {KernelKind::fused_varlen, "fused-varlen"}}};

template <class E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [v, n] : table)
    if (v == value) return n;
  return "?";
}

template <class E, std::size_t N>
E parse_of(const NameTable<E, N>& table, std::string_view text, std::string_view flag) {
  std::string valid;
  for (const auto& [v, n] : table) {
    if (n == text) return v;
    valid += (valid.empty() ? "" : ", ") + std::string(n);
  }
  throw InvalidInput("--" + std::string(flag) + ": unknown value '" + std::string(text) +
                     "'; valid values: " + valid);
}

}  // namespace

std::string_view to_string(SeqLensMode v) { return name_of(kSeqLens, v); }
std::string_view to_string(ScaleMode v) { return name_of(kScale, v); }
std::string_view to_string(PadDecision v) { return name_of(kPadDecision, v); }
std::string_view to_string(PadMethod v) { return name_of(kPadMethod, v); }
std::string_view to_string(OutBuffer v) { return name_of(kOutBuffer, v); }
std::string_view to_string(KernelKind v) { return name_of(kKernel, v); }

SeqLensMode parse_seq_lens(std::string_view s) { return parse_of(kSeqLens, s, "seq-lens"); }
ScaleMode parse_scale(std::string_view s) { return parse_of(kScale, s, "scale"); }
PadDecision parse_pad_decision(std::string_view s) { return parse_of(kPadDecision, s, "pad-decision"); }
PadMethod parse_pad_method(std::string_view s) { return parse_of(kPadMethod, s, "pad-method"); }
OutBuffer parse_out_buffer(std::string_view s) { return parse_of(kOutBuffer, s, "out-buffer"); }
KernelKind parse_kernel(std::string_view s) { return parse_of(kKernel, s, "kernel"); }

std::string describe(const Toggles& t) {
  return "seq-lens=" + std::string(to_string(t.seq_lens)) + " scale=" + std::string(to_string(t.scale)) +
         " pad-decision=" + std::string(to_string(t.pad_decision)) +
         " pad-method=" + std::string(to_string(t.pad_method)) +
         " out-buffer=" + std::string(to_string(t.out_buffer)) + " kernel=" + std::string(to_string(t.kernel));
}

nlohmann::json to_json(const Toggles& t) {
  return {{"seq_lens", to_string(t.seq_lens)},         {"scale", to_string(t.scale)},
          {"pad_decision", to_string(t.pad_decision)}, {"pad_method", to_string(t.pad_method)},
          {"out_buffer", to_string(t.out_buffer)},     {"kernel", to_string(t.kernel)}};
}

Toggles toggles_from_json(const nlohmann::json& j) {
  require(j.is_object(), "toggles: expected an object");
  auto field = [&](const char* key) -> std::string {
    require(j.contains(key) && j.at(key).is_string(), std::string("toggles: missing string '") + key + "'");
    return j.at(key).get<std::string>();
  };
  Toggles t;
  t.seq_lens = parse_seq_lens(field("seq_lens"));
  t.scale = parse_scale(field("scale"));
  t.pad_decision = parse_pad_decision(field("pad_decision"));
  t.pad_method = parse_pad_method(field("pad_method"));
  t.out_buffer = parse_out_buffer(field("out_buffer"));
  t.kernel = parse_kernel(field("kernel"));
  return t;
}

void validate(const Toggles& t) {
  if (t.seq_lens == SeqLensMode::device_cumulative && t.kernel != KernelKind::fused_varlen)
    throw InvalidInput(
        "conflicting toggles: seq-lens=device-cumulative needs kernel=fused-varlen (the unpad "
        "kernel takes per-sequence lengths from the host and cannot read cu_seqlens on the device)");
  if (t.pad_method == PadMethod::none && t.kernel != KernelKind::fused_varlen)
    throw InvalidInput(
        "conflicting toggles: pad-method=none needs kernel=fused-varlen (the unpad kernel, like "
        "_npu_flash_attention_unpad, only takes head_dim 64 or 128, so 72/80 must be padded)");
}

bool is_valid(const Toggles& t) {
  try {
    validate(t);
    return true;
  } catch (const InvalidInput&) {
    return false;
  }
}

Toggles parse_preset_spec(std::string_view spec) {
  const std::size_t plus = spec.find('+');
  Toggles t = preset(spec.substr(0, plus));
  std::string_view rest = plus == std::string_view::npos ? std::string_view{} : spec.substr(plus + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find('+');
    const std::string_view part = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      throw InvalidInput("preset '" + std::string(spec) + "': expected toggle=value after '+', got '" +
                         std::string(part) + "'");
    const std::string key(part.substr(0, eq)), value(part.substr(eq + 1));
    ToggleOverrides o;
    if (key == "seq-lens") o.seq_lens = value;
    else if (key == "scale") o.scale = value;
    else if (key == "pad-decision") o.pad_decision = value;
    else if (key == "pad-method") o.pad_method = value;
    else if (key == "out-buffer") o.out_buffer = value;
    else if (key == "kernel") o.kernel = value;
    else
      throw InvalidInput("preset '" + std::string(spec) + "': unknown toggle '" + key +
                         "' (toggles: seq-lens, scale, pad-decision, pad-method, out-buffer, kernel)");
    t = apply_overrides(t, o);
  }
  validate(t);
  return t;
}

std::vector<std::string> preset_names() { return {"baseline", "pr6448", "pr7104", "optimized"}; }

Toggles preset(std::string_view name) {
  Toggles t;  // defaults are the baseline (before the PRs, #4750)
  if (name == "baseline") return t;
  if (name == "pr6448") {
    // #6448: layer-0 seq_lens cache, scale and enable_pad in __init__, reverted #6204 (3 pads),
    // still empty_like output per call, unpad kernel.
    t.seq_lens = SeqLensMode::layer0_cache;
    t.scale = ScaleMode::init;
    t.pad_decision = PadDecision::init;
    return t;
  }
  if (name == "pr7104") {
    // #7104 on top of #7046: host per-sequence lengths precomputed once per forward (done right:
    // full and window sets), npu_fusion_attention with a cumulative list (fresh output tensor).
    t.seq_lens = SeqLensMode::host_precomputed;
    t.scale = ScaleMode::init;
    t.pad_decision = PadDecision::init;
    t.kernel = KernelKind::fused_varlen;
    return t;
  }
  if (name == "optimized") {
    t.seq_lens = SeqLensMode::host_precomputed;
    t.scale = ScaleMode::init;
    t.pad_decision = PadDecision::init;
    // The fused kernel reads native head_dim, so no padding at all: padding would only add
    // work (GEMM columns on a compute-bound device, copies on a memory-bound one).
    t.pad_method = PadMethod::none;
    t.out_buffer = OutBuffer::reuse;
    t.kernel = KernelKind::fused_varlen;
    return t;
  }
  std::string valid;
  for (const auto& n : preset_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw InvalidInput("--preset: unknown preset '" + std::string(name) + "'; valid presets: " + valid);
}

Toggles apply_overrides(Toggles t, const ToggleOverrides& o) {
  if (o.seq_lens) t.seq_lens = parse_seq_lens(*o.seq_lens);
  if (o.scale) t.scale = parse_scale(*o.scale);
  if (o.pad_decision) t.pad_decision = parse_pad_decision(*o.pad_decision);
  if (o.pad_method) t.pad_method = parse_pad_method(*o.pad_method);
  if (o.out_buffer) t.out_buffer = parse_out_buffer(*o.out_buffer);
  if (o.kernel) t.kernel = parse_kernel(*o.kernel);
  return t;
}

std::vector<Toggles> all_valid_toggles() {
  std::vector<Toggles> out;
  for (const auto& [s, sn] : kSeqLens)
    for (const auto& [k, kn] : kKernel)
      for (const auto& [pm, pmn] : kPadMethod)
        for (const auto& [sc, scn] : kScale)
          for (const auto& [pd, pdn] : kPadDecision)
            for (const auto& [ob, obn] : kOutBuffer) {
              Toggles t{s, sc, pd, pm, ob, k};
              if (is_valid(t)) out.push_back(t);
            }
  return out;
}

}  // namespace encbench::encoder

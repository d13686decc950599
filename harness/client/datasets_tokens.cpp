#include "harness/client/datasets_tokens.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "harness/client/datasets_chat_template.hpp"
#include "harness/client/datasets_random_mm.hpp"
#include "harness/client/datasets_vllm.hpp"
#include "harness/client/image.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/core/error.hpp"
#include "harness/imaging/decode.hpp"
#include "harness/vision/vision_geometry.hpp"
#include "harness/tokenizer/unicode.hpp"
#include "harness/client/datasets_parquet.hpp"

namespace encbench::client {

using tokenizer::TokenId;
using tokenizer::Tokenizer;

namespace {

std::optional<std::filesystem::path> in_hub_cache(const std::string& hub_id) {
  const std::vector<std::filesystem::path> roots = hf_hub_cache_roots();
  std::string folder = "models--" + hub_id;
  for (std::size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/', p)) folder.replace(p, 1, "--");
  std::error_code ec;
  for (const auto& root : roots) {
    const auto snapshots = root / folder / "snapshots";
    if (!std::filesystem::is_directory(snapshots, ec)) continue;
    for (const auto& snap : std::filesystem::directory_iterator(snapshots, ec))
      if (std::filesystem::exists(snap.path() / "tokenizer.json", ec)) return snap.path() / "tokenizer.json";
  }
  return std::nullopt;
}

// The sample's images as (height, width) from their headers; nullopt when one is not a data URL
// of a readable image.
std::optional<std::vector<std::pair<std::int64_t, std::int64_t>>> image_sizes(const SampleRequest& s) {
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (const auto& url : s.image_urls) {
    const auto comma = url.find(',');
    if (url.rfind("data:", 0) != 0 || comma == std::string::npos) return std::nullopt;
    std::string bytes;
    if (!base64_decode(std::string_view(url).substr(comma + 1), bytes)) return std::nullopt;
    try {
      const auto info = imaging::read_info(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      sizes.emplace_back(info.height, info.width);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return sizes;
}

// The sample's image pixels and vision tokens (by the model's rule, when known) from one read of
// its image headers.
void label_images(SampleRequest& s, const vision::VisionGeometry* geometry) {
  s.image_pixels = s.image_urls.empty() ? 0 : -1;
  s.vision_tokens = s.image_urls.empty() ? 0 : -1;
  if (s.image_urls.empty()) return;
  const auto sizes = image_sizes(s);
  if (!sizes) return;
  std::int64_t pixels = 0, tokens = 0;
  for (const auto& [h, w] : *sizes) pixels += h * w;
  s.image_pixels = pixels;
  if (geometry == nullptr) return;
  for (const auto& [h, w] : *sizes) {
    try {
      tokens += vision::image_token_count(*geometry, vision::image_grid(*geometry, h, w));
    } catch (const InvalidInput&) {
      return;  // an aspect ratio the processor refuses: the server will refuse it too
    }
  }
  s.vision_tokens = tokens;
}

}  // namespace

std::optional<std::filesystem::path> resolve_tokenizer(const std::string& name) {
  if (name.empty()) return std::nullopt;
  std::error_code ec;
  const std::filesystem::path p(name);
  if (std::filesystem::is_regular_file(p, ec)) return p;
  if (std::filesystem::is_directory(p, ec)) {
    if (std::filesystem::exists(p / "tokenizer.json", ec)) return p / "tokenizer.json";
    return std::nullopt;
  }
  return in_hub_cache(name);
}

TokenPrompt decode_to_target_len(const Tokenizer& tok, std::vector<TokenId> ids, std::size_t target,
                                 const std::function<TokenId()>& random_id, int max_retry) {
  TokenPrompt out;
  for (int remaining = max_retry;; --remaining) {
    out.prompt = tok.decode(ids);
    ids = tok.encode(out.prompt);
    if (remaining <= 0 || ids.size() == target) break;
    if (ids.size() < target) {
      while (ids.size() < target) ids.push_back(random_id());
    } else {
      ids.resize(target);
    }
  }
  out.prompt_len = static_cast<std::int64_t>(ids.size());
  out.mismatch = out.prompt_len - static_cast<std::int64_t>(target);
  return out;
}

TokenPrompt decode_to_target_len(const Tokenizer& tok, std::vector<TokenId> ids, std::size_t target,
                                 std::mt19937_64& rng, int max_retry) {
  std::uniform_int_distribution<TokenId> any_id(0, static_cast<TokenId>(tok.vocab_size()) - 1);
  return decode_to_target_len(tok, std::move(ids), target, [&] { return any_id(rng); }, max_retry);
}

namespace {
// Text that stays one token per copy when repeated after any text: " the", " a", ... whichever
// the vocabulary has (a space opens a new pre-token piece, so it never merges with what precedes).
std::optional<std::string> filler_text(const Tokenizer& tok) {
  for (const std::string text : {" the", " a", " x", " I"}) {
    const auto ids = tok.encode(text + text + text);
    if (ids.size() == 3 && ids[0] == ids[1] && ids[1] == ids[2]) return text;
  }
  return std::nullopt;
}

// Byte offsets of the code point boundaries of valid UTF-8 text (0 and size() included).
std::vector<std::size_t> boundaries(const std::string& text) {
  std::vector<std::size_t> out{0};
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t len = 0;
    tokenizer::decode_utf8(text, pos, len);
    pos += len;
    out.push_back(pos);
  }
  return out;
}
}  // namespace

TokenPrompt exact_length_prompt(const Tokenizer& tok, TokenPrompt prompt, std::size_t target) {
  if (prompt.mismatch == 0 || target == 0) return prompt;
  const auto filler = filler_text(tok);
  if (!filler) return prompt;
  // The longest prefix (whole code points) of at most `target` tokens, then filler up to target;
  // a prefix whose end re-tokenizes with the filler is shortened and tried again.
  const std::vector<std::size_t> cut = boundaries(prompt.prompt);
  std::size_t lo = 0, hi = cut.size() - 1;
  while (lo < hi) {
    const std::size_t mid = (lo + hi + 1) / 2;
    if (tok.encode(std::string_view(prompt.prompt).substr(0, cut[mid])).size() <= target) lo = mid; else hi = mid - 1;
  }
  for (std::size_t k = lo + 1; k-- > 0 && lo - k < 16;) {
    std::string text = prompt.prompt.substr(0, cut[k]);
    const std::size_t have = tok.encode(text).size();
    if (have > target) continue;
    for (std::size_t i = have; i < target; ++i) text += *filler;
    if (tok.encode(text).size() == target) {
      prompt.prompt = std::move(text);
      prompt.prompt_len = static_cast<std::int64_t>(target);
      prompt.mismatch = 0;
      return prompt;
    }
  }
  return prompt;
}

RandomPromptPlan draw_random_prompt_plan(const Tokenizer& tok, const RandomDatasetConfig& config, std::size_t count,
                                         NumpyGenerator& rng) {
  const auto real_input_len = std::max<std::int64_t>(0, config.input_len - static_cast<std::int64_t>(tok.num_special_tokens_to_add()));
  const auto lo = static_cast<std::int64_t>(std::floor(static_cast<double>(real_input_len) * (1 - config.range_ratio)));
  const auto hi = static_cast<std::int64_t>(std::ceil(static_cast<double>(real_input_len) * (1 + config.range_ratio)));
  require(config.prefix_len + lo >= 1,
          "--random-input-len is too small: with " + std::to_string(tok.num_special_tokens_to_add()) +
              " special tokens and --random-range-ratio " + std::to_string(config.range_ratio) +
              " the smallest prompt (prefix + sampled) has no token");
  // vLLM's get_sampling_params: output bounds at least 1.
  const auto out_lo = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(config.output_len * (1 - config.output_range_ratio))));
  const auto out_hi = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(config.output_len * (1 + config.output_range_ratio))));
  RandomPromptPlan plan;
  const auto specials = tok.special_ids();
  for (TokenId id = 0; id < static_cast<TokenId>(tok.vocab_size()); ++id)
    if (!std::binary_search(specials.begin(), specials.end(), id)) plan.allowed.push_back(id);
  require(!plan.allowed.empty(), "--tokenizer: the vocabulary has no ordinary token to make prompts from");
  // vLLM's draws, in its order: input lengths, output lengths, offsets (each an array of `count`).
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  plan.input_lens.resize(count);
  plan.output_lens.resize(count);
  plan.offsets.resize(count);
  for (auto& l : plan.input_lens) l = rng.integers(lo, hi + 1);
  for (auto& l : plan.output_lens) l = rng.integers(out_lo, out_hi + 1);
  for (auto& o : plan.offsets) o = rng.integers(0, vocab);
  // get_prefix: allowed ids, then gen_prompt_decode_to_target_len(prefix, prefix_len, rng).
  plan.prefix_len = static_cast<std::size_t>(config.prefix_len);
  if (plan.prefix_len > 0) {
    std::vector<TokenId> raw(plan.prefix_len);
    for (auto& id : raw) id = plan.allowed[static_cast<std::size_t>(rng.integers(0, static_cast<std::int64_t>(plan.allowed.size())))];
    const TokenPrompt p = decode_to_target_len(tok, std::move(raw), plan.prefix_len,
                                               [&] { return static_cast<TokenId>(rng.integers(0, vocab)); });
    plan.prefix = tok.encode(p.prompt);  // vLLM's adjusted tokens: the last re-encoding
  }
  return plan;
}

TokenPrompt random_token_prompt(const Tokenizer& tok, const RandomPromptPlan& plan, std::size_t i, NumpyGenerator& rng) {
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  std::vector<TokenId> ids = plan.prefix;
  const std::size_t n = plan.allowed.size();
  for (std::int64_t k = 0; k < plan.input_lens[i]; ++k)
    ids.push_back(plan.allowed[(static_cast<std::size_t>(plan.offsets[i]) + i + static_cast<std::size_t>(k)) % n]);
  const std::size_t target = plan.prefix_len + static_cast<std::size_t>(plan.input_lens[i]);
  TokenPrompt p = decode_to_target_len(tok, std::move(ids), target, [&] { return static_cast<TokenId>(rng.integers(0, vocab)); });
  p.vllm_mismatch = p.mismatch;
  p.output_len = plan.output_lens[i];
  return exact_length_prompt(tok, std::move(p), target);
}

std::vector<TokenPrompt> random_token_prompts(const Tokenizer& tok, const RandomDatasetConfig& config,
                                              std::size_t count, std::uint64_t seed) {
  // vLLM's RandomDataset: one np.random.default_rng(seed) for every draw.
  NumpyGenerator rng(seed);
  const RandomPromptPlan plan = draw_random_prompt_plan(tok, config, count, rng);
  std::vector<TokenPrompt> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) out.push_back(random_token_prompt(tok, plan, i, rng));
  return out;
}

std::string vision_model_key(const std::string& model) {
  std::string m = model.substr(model.rfind('/') == std::string::npos ? 0 : model.rfind('/') + 1);
  std::transform(m.begin(), m.end(), m.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const std::string suffix : {"-instruct", "-thinking"})
    if (m.size() > suffix.size() && m.compare(m.size() - suffix.size(), suffix.size(), suffix) == 0)
      m.resize(m.size() - suffix.size());
  for (const auto& known : vision::known_vision_models())
    if (m == known) return known;
  return "";
}

namespace {
// Each sample's text tokens (its prompt_len with a tokenizer, -1 without) and vision tokens.
void label_tokens(Dataset& dataset, const Tokenizer* tok, const std::string& vision_model) {
  const std::string key = vision_model_key(vision_model);
  std::optional<vision::VisionGeometry> geometry;
  if (!key.empty()) geometry = vision::vision_geometry_for(key);
  for (auto& s : dataset.samples) {
    s.text_tokens = tok != nullptr ? s.prompt_len : -1;
    label_images(s, geometry ? &*geometry : nullptr);
  }
}
}  // namespace

std::string apply_tokenizer(Dataset& dataset, const DatasetConfig& config, const Tokenizer* tok,
                            const std::string& vision_model) {
  std::string note;
  if (tok != nullptr && dataset.layout == "random-mm") {
    // The items are drawn between the prompts: the whole dataset is vLLM's again, with this tokenizer.
    dataset = load_random_mm(config, tok);
    note = "random-mm prompts made of tokenizer ids, items between them (vLLM's RandomMultiModalDataset)";
  } else if (tok != nullptr && dataset.layout == "random") {
    const auto prompts = random_token_prompts(*tok, config.random, dataset.samples.size(), config.seed);
    std::int64_t mismatch = 0, fixed = 0;
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      dataset.samples[i].prompt = prompts[i].prompt;
      dataset.samples[i].prompt_len = prompts[i].prompt_len;
      if (!config.output_len) dataset.samples[i].output_len = static_cast<int>(prompts[i].output_len);
      mismatch += prompts[i].mismatch;
      fixed += prompts[i].vllm_mismatch != 0 && prompts[i].mismatch == 0 ? 1 : 0;
    }
    note = "random prompts made of tokenizer ids (vLLM's RandomDataset)";
    if (fixed != 0)
      note += "; " + std::to_string(fixed) + " prompt(s) were still off after vLLM's 10 retries and were brought to the exact length";
    if (mismatch != 0)
      note += "; " + std::to_string(std::llabs(mismatch)) + (mismatch > 0 ? " more" : " fewer") +
              " tokens than asked for across all prompts after decoding and re-encoding (as vLLM warns)";
  } else if (tok != nullptr) {
    for (auto& s : dataset.samples) s.prompt_len = static_cast<std::int64_t>(tok->encode(s.prompt, true).size());
    note = "prompt lengths counted by the tokenizer";
  }
  label_tokens(dataset, tok, vision_model);
  return note;
}

}  // namespace encbench::client

namespace encbench::client {

DatasetTokens tokenize_dataset(Dataset& dataset, const DatasetConfig& config, const std::string& tokenizer_flag,
                               const std::string& model) {
  DatasetTokens out;
  const std::string name = tokenizer_flag.empty() ? model : tokenizer_flag;
  std::error_code ec;
  if (!tokenizer_flag.empty() && std::filesystem::is_directory(tokenizer_flag, ec) &&
      !std::filesystem::exists(std::filesystem::path(tokenizer_flag) / "tokenizer.json", ec))
    throw InvalidInput("--tokenizer " + tokenizer_flag + ": the directory holds no tokenizer.json");
  const auto file = resolve_tokenizer(name);
  if (!file) {
    apply_tokenizer(dataset, config, nullptr, model);
    // What counting in words means for this dataset: random prompts are made of words, file
    // prompts are sent as written and only their lengths are words.
    const bool random = dataset.layout == "random" || dataset.layout == "random-mm";
    out.note = "no tokenizer" + (name.empty() ? std::string() : " found for '" + name + "' (a tokenizer.json, a directory "
                                                                "holding one, or a hub id in the local hub cache)") +
               (random ? ": random prompts have --random-input-len words, not tokens (--tokenizer makes them of tokens)"
                       : ": prompt lengths (Total input tokens) are counted in whitespace-separated words, not tokens "
                         "(--tokenizer counts tokens)");
    return out;
  }
  const Tokenizer tok = Tokenizer::load(*file);
  out.tokenizer_file = file->string();
  // vLLM's CustomDataset renders the chat template before counting (only with a tokenizer).
  const std::string templated =
      dataset.layout == "custom" ? apply_custom_chat_template(dataset, config.chat_template, *file) : std::string();
  out.note = "tokenizer " + out.tokenizer_file + ": " + apply_tokenizer(dataset, config, &tok, model) +
             (templated.empty() ? "" : "; " + templated);
  return out;
}

}  // namespace encbench::client

namespace encbench::client {

TokenizedDataset load_tokenized_dataset(const DatasetConfig& config, const std::string& tokenizer_flag,
                                        const std::string& model, bool skip_tokenizer) {
  // A missing file is said first, in one line, whatever else the flags lack (a tokenizer, say);
  // the generated datasets ignore --dataset-path, as vLLM's do.
  const bool reads_path = config.name != "random" && config.name != "random-mm" && config.name != "prefix_repetition";
  if (reads_path && !config.path.empty()) require_dataset_path_exists(config.path);
  TokenizedDataset out;
  if (config.name == "random-mm" && !skip_tokenizer) {
    // One pass: vLLM draws the items between the prompts, so they are made with the tokenizer.
    if (const auto file = resolve_tokenizer(tokenizer_flag.empty() ? model : tokenizer_flag)) {
      const Tokenizer tok = Tokenizer::load(*file);
      out.dataset = load_random_mm(config, &tok);
      label_tokens(out.dataset, &tok, model);
      out.tokens.tokenizer_file = file->string();
      out.tokens.note = "tokenizer " + out.tokens.tokenizer_file +
                        ": random-mm prompts made of tokenizer ids, items drawn between them (vLLM's RandomMultiModalDataset)";
      return out;
    }
  }
  if (!is_tokenizer_dataset(config.name)) {
    out.dataset = load_dataset(config);
    out.tokens = skip_tokenizer ? tokenize_dataset(out.dataset, config, "", "")
                                : tokenize_dataset(out.dataset, config, tokenizer_flag, model);
    return out;
  }
  const auto file = skip_tokenizer ? std::nullopt : resolve_tokenizer(tokenizer_flag.empty() ? model : tokenizer_flag);
  require(file.has_value(), "--dataset-name " + config.name + " makes and counts its prompts with the model's tokenizer: "
                            "give --tokenizer (a tokenizer.json or a directory holding one)" +
                                std::string(skip_tokenizer ? ", without --skip-tokenizer-init" : ""));
  require(config.num_prompts > 0, "--num-prompts must be > 0");
  const Tokenizer tok = Tokenizer::load(*file);
  out.dataset = config.name == "sharegpt"            ? load_sharegpt(config, tok)
                : config.name == "prefix_repetition" ? load_prefix_repetition(config, tok)
                : config.name == "burstgpt"          ? load_burstgpt(config, tok)
                : config.name == "sonnet"            ? load_sonnet(config, tok)
                                                     : load_timed_trace(config, tok);
  const std::string key = vision_model_key(model);
  std::optional<vision::VisionGeometry> geometry;
  if (!key.empty()) geometry = vision::vision_geometry_for(key);
  for (auto& s : out.dataset.samples) {
    s.text_tokens = s.prompt_len;
    label_images(s, geometry ? &*geometry : nullptr);
  }
  out.tokens.tokenizer_file = file->string();
  out.tokens.note = "tokenizer " + out.tokens.tokenizer_file + ": " + config.name + " prompts made and counted as vLLM's" +
                    (out.dataset.chat_template_note.empty() ? "" : "; " + out.dataset.chat_template_note);
  return out;
}

}  // namespace encbench::client

// vLLM's file-backed text datasets built from token counts: `burstgpt` (BurstGPTDataset) and
// `sonnet` (SonnetDataset). See datasets_vllm.hpp for what each sends.
#include <algorithm>
#include <cfenv>
#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

#include "harness/client/datasets_chat_template.hpp"
#include "harness/client/datasets_vllm.hpp"
#include "harness/client/numpy_random.hpp"
#include "harness/client/python_random.hpp"
#include "harness/core/error.hpp"

namespace encbench::client {

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  // BurstGPT's CSV has no quoted fields; a quote is refused rather than misread.
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') out.emplace_back();
    else if (c != '\r') out.back() += c;
  }
  return out;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name, const std::string& file) {
  const auto it = std::find(header.begin(), header.end(), name);
  require(it != header.end(), file + ":1: BurstGPT header lacks the column '" + name +
                                  "' (expected Timestamp,Model,Request tokens,Response tokens,...)");
  return static_cast<std::size_t>(it - header.begin());
}

std::int64_t non_negative_int(const std::string& text, const std::string& where, const std::string& what) {
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  require(used > 0 && used == text.size() && v >= 0, where + ": " + what + " must be an integer >= 0, got '" + text + "'");
  return v;
}

struct BurstRow {
  std::int64_t request_tokens = 0, response_tokens = 0;
  std::size_t line = 0;
};

// vLLM's load_data: rows whose Model is GPT-4 and whose Response tokens are > 0.
std::vector<BurstRow> read_burstgpt(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), "--dataset-path " + path + ": cannot read");
  std::string line;
  require(static_cast<bool>(std::getline(in, line)), path + ": empty file (BurstGPT CSV expected)");
  const auto header = split_csv_line(line);
  const std::size_t model = column(header, "Model", path), req = column(header, "Request tokens", path),
                    resp = column(header, "Response tokens", path);
  std::vector<BurstRow> rows;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const std::string where = path + ":" + std::to_string(n);
    require(line.find('"') == std::string::npos, where + ": quoted CSV fields are not supported");
    const auto cells = split_csv_line(line);
    require(cells.size() == header.size(), where + ": " + std::to_string(cells.size()) + " fields, the header has " +
                                               std::to_string(header.size()));
    const std::int64_t request = non_negative_int(cells[req], where, "Request tokens");
    const std::int64_t response = non_negative_int(cells[resp], where, "Response tokens");
    if (cells[model] != "GPT-4" || response <= 0) continue;
    rows.push_back({request, response, n});
  }
  return rows;
}

std::vector<std::string> read_lines_keeping_newlines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "--dataset-path " + path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  std::vector<std::string> lines;  // Python's readlines(): each line keeps its "\n"
  std::size_t start = 0;
  while (start < all.size()) {
    const std::size_t nl = all.find('\n', start);
    const std::size_t end = nl == std::string::npos ? all.size() : nl + 1;
    lines.push_back(all.substr(start, end - start));
    start = end;
  }
  return lines;
}

// Python's round(): halves to even (the default floating-point rounding mode).
long long python_round(double v) {
  std::fesetround(FE_TONEAREST);
  return std::llrint(v);
}

}  // namespace

Dataset load_burstgpt(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  require(!config.path.empty(), "--dataset-name burstgpt needs --dataset-path (BurstGPT's CSV, e.g. BurstGPT_without_fails_2.csv)");
  const auto rows = read_burstgpt(config.path);
  require(!rows.empty(), config.path + ": no row with Model GPT-4 and Response tokens > 0 (vLLM's filter)");
  // pandas' DataFrame.sample(n, random_state=seed): np.random.RandomState(seed), then the first n
  // of permutation(rows) when the file has enough rows, else randint(0, rows) n times (replace).
  NumpyRandomState rng(static_cast<std::uint32_t>(config.seed));
  std::vector<std::size_t> picked;
  Dataset ds;
  ds.layout = "burstgpt";
  ds.file = config.path;
  ds.source_rows = rows.size();
  if (config.num_prompts <= rows.size()) {
    picked = rng.permutation(rows.size());
    picked.resize(config.num_prompts);
  } else {
    picked.assign(config.num_prompts, 0);
    for (auto& p : picked) p = static_cast<std::size_t>(rng.randint(0, static_cast<std::int64_t>(rows.size())));
    ds.oversampled = config.num_prompts - rows.size();
  }
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size());
  require(vocab > 0, "burstgpt: the tokenizer has an empty vocabulary");
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const BurstRow& row = rows[picked[i]];
    // vLLM: token ids (i + j) % vocab_size, decoded; prompt_len is the row's count, not re-counted.
    std::vector<tokenizer::TokenId> ids(static_cast<std::size_t>(row.request_tokens));
    for (std::size_t j = 0; j < ids.size(); ++j)
      ids[j] = static_cast<tokenizer::TokenId>((static_cast<std::int64_t>(i) + static_cast<std::int64_t>(j)) % vocab);
    SampleRequest s;
    s.source_row = row.line;
    s.prompt = tok.decode(ids);
    s.prompt_len = row.request_tokens;
    s.output_len = static_cast<int>(std::min<std::int64_t>(row.response_tokens, INT32_MAX));
    ds.samples.push_back(std::move(s));
  }
  return ds;
}

Dataset load_sonnet(const DatasetConfig& config, const tokenizer::Tokenizer& tok) {
  const VllmTextDatasetConfig& v = config.vllm_text;
  require(!config.path.empty(), "--dataset-name sonnet needs --dataset-path (a text file of poem lines, vLLM's benchmarks/sonnet.txt)");
  require(v.sonnet_output_len > 0, "--sonnet-output-len must be > 0");
  const auto lines = read_lines_keeping_newlines(config.path);
  require(!lines.empty(), config.path + ": no lines (sonnet expects a text file of poem lines)");
  double total = 0;
  for (const auto& line : lines) total += static_cast<double>(tok.encode(line, true).size());
  const double avg_len = total / static_cast<double>(lines.size());
  const std::string base_prompt = "Pick as many lines as you can from these poem lines:\n";
  // vLLM counts the base prompt and every prompt as the user turn of the model's chat template
  // (apply_chat_template(add_generation_prompt=True), then tokenizer(...) with special tokens).
  Dataset ds;
  const auto chat_template = find_chat_template(tok.source(), ds.chat_template_note);
  auto templated = [&](const std::string& text) { return chat_template ? render_user_turn(*chat_template, text) : text; };
  const auto base_offset = static_cast<long long>(tok.encode(templated(base_prompt), true).size());
  require(v.sonnet_input_len > base_offset, "--sonnet-input-len (" + std::to_string(v.sonnet_input_len) +
                                                ") must be higher than the base prompt length (" + std::to_string(base_offset) + ")");
  const long long num_input_lines = python_round(static_cast<double>(v.sonnet_input_len - base_offset) / avg_len);
  const long long num_prefix_lines =
      std::max(python_round(static_cast<double>(v.sonnet_prefix_len - base_offset) / avg_len), 0LL);
  std::string prefix;
  for (long long k = 0; k < num_prefix_lines && k < static_cast<long long>(lines.size()); ++k) prefix += lines[static_cast<std::size_t>(k)];
  const long long extra = std::max(num_input_lines - num_prefix_lines, 0LL);  // Python: choices(k<0) is []
  // vLLM draws the lines with random.choices from Python's global random, seeded with --seed at
  // the start (nothing draws from it before the dataset).
  PythonRandom rng(config.seed);
  ds.layout = "sonnet";
  ds.file = config.path;
  ds.source_rows = lines.size();
  if (chat_template)  // vLLM's return_prompt_formatted: the templated text except to openai-chat
    ds.chat_template_note += config.chat_template.chat_backend
                                 ? ": prompts counted templated, sent raw (the chat endpoint templates them)"
                                 : ": prompts counted and sent templated";
  // vLLM retries until a prompt fits (forever when none can); bounded here.
  const std::size_t max_attempts = 100 + 100 * config.num_prompts;
  for (std::size_t attempt = 0; ds.samples.size() < config.num_prompts; ++attempt) {
    require(attempt < max_attempts, config.path + ": no sonnet prompt of " + std::to_string(num_input_lines) +
                                        " lines fits --sonnet-input-len " + std::to_string(v.sonnet_input_len) +
                                        " tokens in " + std::to_string(max_attempts) + " tries");
    std::string prompt = base_prompt + prefix;
    for (long long k = 0; k < extra; ++k) prompt += lines[rng.choice_index(lines.size())];  // random.choices
    std::string formatted = templated(prompt);
    const auto prompt_len = static_cast<std::int64_t>(tok.encode(formatted, true).size());
    if (prompt_len > v.sonnet_input_len) continue;
    SampleRequest s;
    s.source_row = ds.samples.size();
    s.prompt = config.chat_template.chat_backend ? std::move(prompt) : std::move(formatted);
    s.prompt_len = prompt_len;
    s.output_len = v.sonnet_output_len;
    ds.samples.push_back(std::move(s));
  }
  return ds;
}

}  // namespace encbench::client

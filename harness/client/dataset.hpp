#pragma once
// Datasets: turn a dataset description into sample requests (prompt text, image data URLs, output
// length), all images converted to RGB and re-encoded as JPEG data URLs here, before any timing.
//
//  - vision-arena / hf: local copies of lmarena-ai/vision-arena-bench-v0.1 (prompt
//    turns[0][0].content) or lmarena-ai/VisionArena-Chat (conversation[0][0].content), images[0]
//    as {bytes: base64 | path | url} or a string; JSONL or a JSON array; a file or a directory
//    holding one. Or parquet as the hub stores it (datasets_parquet.hpp): a Hugging Face id in the
//    local hub cache, a .parquet file or a directory of shards, only the rows picked read. The
//    layout is detected from the rows (parquet: the columns).
//  - random-mm: synthetic noise images of configured sizes/counts and random-word prompts of the
//    configured lengths, deterministic from the seed. `random` is the same with no images.
//  - custom: JSONL of {prompt, output_tokens?}, text only (vllm's CustomDataset): max tokens are
//    --custom-output-len (default 256), or each row's output_tokens when it is -1.
//  - custom_image: JSONL of {prompt, image_files: [path | url, ...], output_tokens?}; paths are
//    relative to the file and sent as JPEG data URLs (vllm's --custom-ensure-client-side-data).
// Rows are shuffled with the seed and oversampled (duplicated at random, seeded) when short.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace encbench::client {

struct ImageBucket {
  int height = 0, width = 0;
  double probability = 0;
};

struct RandomDatasetConfig {
  int input_len = 1024;        // --random-input-len (words, our stand-in for tokens)
  int output_len = 128;        // --random-output-len
  int prefix_len = 0;          // --random-prefix-len: the same random words open every prompt
  double range_ratio = 0.0;    // --random-range-ratio: input lengths uniform in [L(1-r), L(1+r)]
  double output_range_ratio = 0.0;  // the same for output lengths ({"input": a, "output": b} sets both)
  int mm_base_items = 1;       // --random-mm-base-items-per-request
  double mm_items_range_ratio = 0.0;  // --random-mm-num-mm-items-range-ratio
  int mm_limit_images = 255;   // --random-mm-limit-mm-per-prompt image limit
  std::vector<ImageBucket> buckets{{256, 256, 0.5}, {720, 1280, 0.5}};  // --random-mm-bucket-config
};

// vLLM's tokenizer-made text datasets (datasets_vllm.hpp).
struct VllmTextDatasetConfig {
  std::optional<int> sharegpt_output_len;  // --sharegpt-output-len (else the completion's tokens)
  int prefix_len = 256, suffix_len = 256, num_prefixes = 10, output_len = 128;  // --prefix-repetition-*
  // timed_trace (--timed-trace-*, vLLM's defaults); self_timed: the trace's timestamps are the schedule
  int chunk_hash_size = 16;
  double sec_multiplier = 1.0;
  std::string label_timestamp = "timestamp", label_input_length = "input_length",
              label_output_length = "output_length", label_hash_ids = "hash_ids";
  bool self_timed = true;
  int sonnet_input_len = 550, sonnet_output_len = 150, sonnet_prefix_len = 200;  // --sonnet-* (vLLM's defaults)
};

// The model's chat template, applied client-side as vLLM applies it (datasets_chat_template.hpp).
struct ChatTemplateConfig {
  bool skip = false;         // --skip-chat-template: custom prompts go as written (vLLM's CustomDataset)
  std::string kwargs_json;   // --chat-template-kwargs: a JSON object of template variables (custom, as vLLM)
  bool chat_backend = false; // --backend openai-chat: sonnet sends the raw prompt, counted templated (vLLM)
};

struct DatasetConfig {
  std::string name = "random";       // hf | vision-arena | random-mm | random | custom
  std::string path;                  // --dataset-path
  std::string hf_split = "train";
  std::size_t num_prompts = 1000;
  std::uint64_t seed = 0;
  std::optional<int> output_len;     // hf/vision-arena: --output-len, else --hf-output-len (128 when unset)
  int custom_output_len = 256;       // custom/custom_image: --custom-output-len (-1: the rows' output_tokens)
  bool shuffle = true;               // --disable-shuffle turns it off
  bool oversample = true;            // --no-oversample turns it off
  bool hf_streaming = true;          // hf row order as vLLM's streamed HF dataset; --no-stream: as a loaded one
  bool client_side_images = false;   // custom_mm: send image files as data URLs (--custom-ensure-client-side-data), not file://
  bool transcode_images = true;      // false: rows' images keep their own bytes, undecoded (dataset stats)
  RandomDatasetConfig random;
  VllmTextDatasetConfig vllm_text;
  ChatTemplateConfig chat_template;
};

struct SampleRequest {
  std::string prompt;
  // timed_trace: the prompt as token ids, sent as the completions `prompt` (a JSON array of ints),
  // as vLLM sends TimedTrace's list[int]; `prompt` then holds their decoded text for stats only.
  std::optional<std::vector<std::int32_t>> prompt_token_ids;
  std::vector<std::string> image_urls;  // data:image/jpeg;base64,... or a passed-through URL
  int output_len = 128;
  std::int64_t prompt_len = 0;          // tokens with --tokenizer (datasets_tokens.hpp), else whitespace words
  std::int64_t text_tokens = -1;        // prompt tokens by the tokenizer (-1: none loaded)
  std::int64_t vision_tokens = -1;      // image tokens by the model's rule (-1: unknown; 0: no image)
  std::int64_t image_pixels = -1;       // width x height summed over the images (-1: unknown; 0: no image)
  std::size_t source_row = 0;           // row in the dataset file (or generated index)
  // The user's later turns of the row's conversation, in order (VisionArena-Chat's conversation,
  // ShareGPT's human turns after the first): `bench multi-turn` sends them as a session.
  std::vector<std::string> later_user_turns;
};

struct Dataset {
  std::string layout;                   // vision-arena-bench | visionarena-chat | custom | random-mm | random
  std::vector<SampleRequest> samples;
  std::size_t source_rows = 0;
  std::size_t oversampled = 0;          // samples that duplicate another row
  bool multimodal = false;
  bool ignore_eos_default = false;      // random datasets turn ignore_eos on (as vllm)
  std::vector<double> arrival_s;        // timed_trace: each sample's send time (s from the run's start), else empty
  std::uint64_t numpy_global_draws = 0; // 32-bit draws taken from vLLM's global np.random (prefix_repetition)
  std::filesystem::path file;           // the file actually read ("" for generated datasets)
  std::string chat_template_note;       // sonnet: what was done about the chat template, for stderr
};

Dataset load_dataset(const DatasetConfig& config);

// Refuses a --dataset-path that does not exist, in one line ("no such file or directory"); a path
// of the form owner/name also says how to export that Hugging Face dataset (docs/client.md).
void require_dataset_path_exists(const std::string& path);

// The known dataset names, for messages and --help.
const std::vector<std::string>& known_dataset_names();
// Parses vllm's "{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}" (height, width, frames); frames must be 1.
std::vector<ImageBucket> parse_bucket_config(const std::string& text);
// Words in `text` separated by whitespace: the client-side prompt length estimate.
std::int64_t count_words(const std::string& text);

// ---- the sample generator (`encbench dataset generate`)
struct GenerateConfig {
  std::string layout = "vision-arena-bench";  // vision-arena-bench | visionarena-chat | custom | custom_image
  std::size_t num = 20;
  std::uint64_t seed = 0;
  int width = 320, height = 240;
  std::string image_format = "png";           // png | jpeg (as stored in the file)
  std::string image_ref = "bytes";            // bytes (base64 in the row) | path (files beside)
  std::filesystem::path out;
};
// Writes the JSONL file (and the image files for image_ref=path); returns the rows written.
std::size_t generate_dataset(const GenerateConfig& config);

}  // namespace encbench::client

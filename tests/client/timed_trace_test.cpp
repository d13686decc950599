// timed_trace as vLLM sends it: the real binary against the scripted server, the
// request bodies it received and the schedule the client computed, against independent references.
//  - The completions `prompt` is the JSON array of ints vLLM's TimedTrace._expand_prompt gives
//    (vllm/benchmarks/datasets/datasets.py @ 003cf029: SampleRequest(prompt=prompt_ids), sent as
//    {"prompt": request_func_input.prompt} by endpoint_request_func.py @ 02cfb534): the ids come from
//    tests/client/numpy_reference.py (CPython's own hash and random.Random), not from our code.
//  - Each row goes at its own timestamp x --timed-trace-sec-multiplier from the benchmark's start
//    (serve.py @ 009e6d4a, get_request with self_timed: sleep until start_ts + timestamp, only when
//    > 0): asserted on the intended send times of --save-detailed, never on wall time.
#include <gtest/gtest.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/client/request_builder.hpp"
#include "harness/core/error.hpp"
#include "tests/client/numpy_reference.hpp"
#include "tests/support/process.hpp"
#include "tests/support/test_server.hpp"
#include "tests/tokenizer/test_files.hpp"

namespace encbench::client {
namespace {

using nlohmann::json;

TEST(TimedTraceRequests, CompletionsPromptIsTheIdListAndChatRefusesIt) {
  SampleRequest s;
  s.prompt = "decoded text, not sent";
  s.prompt_token_ids = std::vector<std::int32_t>{5, 0, 151643, 7};
  s.output_len = 3;
  RequestOptions o;
  o.backend = Backend::openai;
  o.model = "m";
  const json body = json::parse(build_body(s, o));
  ASSERT_TRUE(body["prompt"].is_array()) << body.dump();
  EXPECT_EQ(body["prompt"].get<std::vector<std::int64_t>>(), (std::vector<std::int64_t>{5, 0, 151643, 7}));
  EXPECT_EQ(body["max_tokens"], 3);
  s.prompt_token_ids->clear();  // an input_length of 0: vLLM sends the empty list
  EXPECT_EQ(json::parse(build_body(s, o))["prompt"], json::array());
  s.prompt_token_ids.reset();  // every other dataset: the text
  EXPECT_EQ(json::parse(build_body(s, o))["prompt"], "decoded text, not sent");
  s.prompt_token_ids = std::vector<std::int32_t>{1};
  o.backend = Backend::openai_chat;
  EXPECT_THROW(build_body(s, o), InvalidInput);
}

// The reference's output: for each row, its length then its ids.
std::vector<std::vector<std::int64_t>> split_rows(const std::vector<double>& flat, std::size_t rows) {
  std::vector<std::vector<std::int64_t>> out;
  std::size_t at = 0;
  for (std::size_t r = 0; r < rows && at < flat.size(); ++r) {
    const auto n = static_cast<std::size_t>(flat[at++]);
    std::vector<std::int64_t> ids;
    for (std::size_t k = 0; k < n && at < flat.size(); ++k) ids.push_back(static_cast<std::int64_t>(flat[at++]));
    out.push_back(std::move(ids));
  }
  return out;
}

TEST(TimedTraceRequests, BinarySendsVllmsIdListsAtEachRowsOwnTime) {
  tokenizer::testing::TempDir dir;
  // ms timestamps not starting at 0 (the first is before it: vLLM sends it at once); shared hash
  // ids, a partial last chunk, a row with too few hash ids, an input length of 0.
  const auto trace = dir.write("trace.jsonl",
                               "{\"timestamp\": -3, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n"
                               "{\"timestamp\": 250, \"input_length\": 37, \"output_length\": 2, \"hash_ids\": [1, 2, 7, 9]}\n"
                               "{\"timestamp\": 250, \"input_length\": 16, \"output_length\": 4, \"hash_ids\": [123456789012, 1]}\n"
                               "{\"timestamp\": 300, \"input_length\": 0, \"output_length\": 1, \"hash_ids\": [5]}\n"
                               "{\"timestamp\": 310, \"input_length\": 50, \"output_length\": 2, \"hash_ids\": [-4, 2]}\n");
  const std::vector<double> expected_s = {0.0, 0.250, 0.250, 0.300, 0.310};  // max(0, ts x 0.001)
  const std::vector<int> output_lens = {3, 2, 4, 1, 2};
  const auto tok_file = tokenizer::testing::tiny_qwen2() / "tokenizer.json";
  NUMPY_OR_FAIL(flat, "timed_trace " + tok_file.string() + " " + trace.string() + " 16 3");
  const auto expected_ids = split_rows(*flat, expected_s.size());
  ASSERT_EQ(expected_ids.size(), expected_s.size());

  encbench::testing::TestServer server(encbench::testing::ServerConfig{});
  server.start();
  const auto run = encbench::testing::run_command(
      std::string("PYTHONHASHSEED=3 timeout 120 ") + ENCBENCH_EXE + " bench serve --backend openai --port " +
      std::to_string(server.port()) + " --model m --dataset-name timed_trace --dataset-path " + trace.string() +
      " --timed-trace-sec-multiplier 0.001 --tokenizer " + tokenizer::testing::tiny_qwen2().string() +
      " --num-prompts 10 --request-id-prefix tt- --disable-tqdm --save-result --save-detailed --result-dir " +
      dir.path().string() + " --result-filename r.json 2>&1");
  server.stop();
  ASSERT_EQ(run.rc, 0) << run.output;

  std::map<std::string, std::vector<json>> bodies;  // by x-request-id
  for (const auto& r : server.served())
    if (r.path == "/v1/completions") bodies[r.request_id].push_back(json::parse(r.body));
  for (std::size_t i = 0; i < expected_ids.size(); ++i) {
    const std::string id = "tt-" + std::to_string(i);
    ASSERT_EQ(bodies[id].size(), 1u) << id;
    const json& body = bodies[id][0];
    ASSERT_TRUE(body["prompt"].is_array()) << id << ": " << body.dump();
    EXPECT_EQ(body["prompt"].get<std::vector<std::int64_t>>(), expected_ids[i]) << id;
    EXPECT_EQ(body["max_tokens"], output_lens[i]) << id;
    EXPECT_EQ(body["ignore_eos"], true) << id;  // vLLM's main_async sets it for timed_trace
  }

  std::ifstream in(dir.path() / "r.json");
  const json result = json::parse(in);
  const auto ids = result["request_ids"].get<std::vector<std::string>>();
  const auto intended = result["intended_times"].get<std::vector<double>>();
  const auto text_tokens = result["input_text_tokens"].get<std::vector<std::int64_t>>();
  ASSERT_EQ(ids.size(), expected_s.size());
  ASSERT_EQ(intended.size(), ids.size());
  std::map<std::string, std::size_t> at;
  for (std::size_t k = 0; k < ids.size(); ++k) at[ids[k]] = k;
  const double start = intended[at.at("tt-0")];  // row 0 goes at the start itself (its time is < 0)
  for (std::size_t i = 0; i < expected_s.size(); ++i) {
    const std::size_t k = at.at("tt-" + std::to_string(i));
    // The schedule the client computed (ns-rounded offsets), not when the request left.
    EXPECT_NEAR(intended[k] - start, expected_s[i], 2e-9) << "row " << i;
    EXPECT_EQ(text_tokens[k], static_cast<std::int64_t>(expected_ids[i].size())) << "row " << i;  // prompt_len = len(ids)
  }
}

}  // namespace
}  // namespace encbench::client

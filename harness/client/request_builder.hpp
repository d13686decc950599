#pragma once
// Builds the final request bytes (body and per-request headers) for every sample, before the run,
// the way vllm's openai / openai-chat request functions shape them (see docs/client.md).
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "harness/client/dataset.hpp"
#include "harness/client/records.hpp"

namespace encbench::client {

struct RequestOptions {
  Backend backend = Backend::openai_chat;
  RequestMode mode = RequestMode::stream;
  std::string model;                       // --served-model-name, else the model id
  bool ignore_eos = false;
  std::optional<int> logprobs;             // --logprobs: completions send it (null when unset), as vllm
  nlohmann::json extra_body = nlohmann::json::object();  // sampling flags given, then --extra-body
  std::vector<std::string> headers;        // "Name: value" (from --header K=V), plus Authorization
  std::string request_id_prefix = "bench-";
  // --lora-modules: the model sent by request i (vLLM's req_model_name); empty: `model` for all.
  std::vector<std::string> model_per_request;
};

std::string build_body(const SampleRequest& sample, const RequestOptions& options);
std::vector<PreparedRequest> prepare_requests(const std::vector<SampleRequest>& samples, const RequestOptions& options);

}  // namespace encbench::client

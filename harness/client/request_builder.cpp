#include "harness/client/request_builder.hpp"

#include "harness/core/error.hpp"

namespace encbench::client {

using nlohmann::json;

std::string build_body(const SampleRequest& sample, const RequestOptions& options) {
  json body = json::object();
  body["model"] = options.model;
  if (options.backend == Backend::openai_chat) {
    // vLLM's main_async refuses timed_trace on any backend but its completions ones ('vllm', 'openai').
    require(!sample.prompt_token_ids.has_value(),
            "--dataset-name timed_trace sends token-id prompts and needs a completions backend (--backend openai or vllm)");
    json content = json::array({{{"type", "text"}, {"text", sample.prompt}}});
    for (const auto& url : sample.image_urls)
      content.push_back({{"type", "image_url"}, {"image_url", {{"url", url}}}});
    body["messages"] = json::array({{{"role", "user"}, {"content", content}}});
    body["max_completion_tokens"] = sample.output_len;
  } else {
    require(sample.image_urls.empty(),
            "--backend openai (completions) cannot send images; use --backend openai-chat with --endpoint /v1/chat/completions");
    // A list of ints stays one (vLLM's payload {"prompt": request_func_input.prompt}, TimedTrace's list[int]).
    if (sample.prompt_token_ids) body["prompt"] = *sample.prompt_token_ids;
    else body["prompt"] = sample.prompt;
    // vllm's completions payload always carries these two.
    body["repetition_penalty"] = 1.0;
    body["max_tokens"] = sample.output_len;
    body["logprobs"] = options.logprobs ? json(*options.logprobs) : json(nullptr);
  }
  if (options.mode == RequestMode::stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  } else {
    body["stream"] = false;
  }
  if (options.ignore_eos) body["ignore_eos"] = true;
  // vllm: payload.update(extra_body) last, so it may override any key.
  for (const auto& [key, value] : options.extra_body.items()) body[key] = value;
  return body.dump();
}

std::vector<PreparedRequest> prepare_requests(const std::vector<SampleRequest>& samples, const RequestOptions& options) {
  std::vector<PreparedRequest> out;
  out.reserve(samples.size());
  const bool lora = !options.model_per_request.empty();
  RequestOptions per_request;
  if (lora) {
    per_request = options;
    per_request.model_per_request.clear();
  }
  for (std::size_t i = 0; i < samples.size(); ++i) {
    PreparedRequest r;
    r.index = i;
    r.request_id = options.request_id_prefix + std::to_string(i);
    if (lora) {
      require(i < options.model_per_request.size(), "internal: a LoRA model for every request");
      per_request.model = options.model_per_request[i];
    }
    r.body = build_body(samples[i], lora ? per_request : options);
    r.headers = options.headers;
    r.headers.push_back("x-request-id: " + r.request_id);
    r.prompt_len_client = samples[i].prompt_len;
    r.text_tokens = samples[i].text_tokens;
    r.vision_tokens = samples[i].vision_tokens;
    r.output_len = samples[i].output_len;
    r.image_count = samples[i].image_urls.size();
    r.image_pixels = samples[i].image_pixels;
    for (const auto& url : samples[i].image_urls) r.image_bytes += url.size();
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace encbench::client

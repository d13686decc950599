#pragma once
// Helpers shared by the engine and fault tests.
#include <memory>
#include <string>
#include <vector>

#include "harness/client/send_loop.hpp"
#include "harness/client/request_builder.hpp"
#include "tests/support/test_server.hpp"

namespace encbench::client::test {

inline std::vector<PreparedRequest> text_requests(std::size_t n, int output_len, Backend backend = Backend::openai_chat,
                                                  RequestMode mode = RequestMode::stream) {
  std::vector<SampleRequest> samples(n);
  for (std::size_t i = 0; i < n; ++i) {
    samples[i].prompt = "hello number " + std::to_string(i);
    samples[i].prompt_len = 3;
    samples[i].output_len = output_len;
  }
  RequestOptions o;
  o.backend = backend;
  o.mode = mode;
  o.model = "test-model";
  o.request_id_prefix = "t-";
  return prepare_requests(samples, o);
}

inline SendLoopConfig engine_for(const encbench::testing::TestServer& server, Backend backend = Backend::openai_chat) {
  SendLoopConfig c;
  c.url = server.base_url() + (backend == Backend::openai_chat ? "/v1/chat/completions" : "/v1/completions");
  c.backend = backend;
  c.timeout_s = 20;
  return c;
}

// A started scripted server whose every response waits `ttft_ms` before its first chunk.
inline std::unique_ptr<encbench::testing::TestServer> started_server_with_ttft(double ttft_ms) {
  encbench::testing::Script script;
  script.ttft_ms = ttft_ms;
  encbench::testing::ServerConfig config;
  config.scripts = {script};
  auto server = std::make_unique<encbench::testing::TestServer>(config);
  server->start();
  return server;
}

inline std::size_t failed_count(const SendLoopResult& r) {
  std::size_t n = 0;
  for (const auto& rec : r.records) n += rec.success ? 0 : 1;
  return n;
}

}  // namespace encbench::client::test

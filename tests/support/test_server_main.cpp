// encbench-test-server: the scripted test server as a standalone process, for the README demo and
// the client capacity benchmark (docs/client.md). Serves until SIGINT/SIGTERM.
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "tests/support/test_server.hpp"

int main(int argc, char** argv) {
  using namespace encbench::testing;
  CLI::App app{"encbench-test-server: scripted OpenAI-compatible SSE server on 127.0.0.1 (tests and capacity runs)"};
  ServerConfig config;
  Script script;
  std::string fault = "none";
  app.add_option("--port", config.port, "TCP port on 127.0.0.1 (0 = any free port; printed on stdout)");
  app.add_flag("--no-delay", config.no_delay, "Write every response at once (ignore --ttft-ms/--itl-ms)");
  app.add_option("--ttft-ms", script.ttft_ms, "Delay before the first chunk");
  app.add_option("--itl-ms", script.itl_ms, "Delay between content chunks");
  app.add_option("--tokens", script.tokens, "Tokens per response (-1: max_completion_tokens of the request)");
  app.add_option("--tokens-per-chunk", script.tokens_per_chunk, "Tokens bundled in one chunk");
  app.add_option("--prompt-tokens", script.prompt_tokens, "usage.prompt_tokens reported");
  app.add_option("--fault", fault, "none|http-error|malformed-json|error-event|error-event-typed|no-done|disconnect|stall");
  app.add_option("--model", config.model, "Model id served by GET /v1/models");
  app.add_option("--backlog", config.backlog, "listen() backlog");
  app.add_option("--slowdown-per-s", config.slowdown_per_s,
                 "Drift: delays grow by this fraction per second since --slowdown-since-unix-ms (0.01/60: 1 % per minute)");
  app.add_option("--slowdown-since-unix-ms", config.slowdown_since_unix_ms,
                 "Wall-clock start of the drift (Unix time in ms), shared by servers started one after another");
  CLI11_PARSE(app, argc, argv);
  try {
    script.fault = parse_fault(fault);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  config.scripts = {script};
  config.record = false;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  const int stop_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  TestServer server(config);
  try {
    server.bind();
    std::printf("encbench-test-server listening on http://127.0.0.1:%d (no-delay=%s, fault=%s)\n", server.port(),
                config.no_delay ? "on" : "off", fault.c_str());
    std::fflush(stdout);
    server.serve_here(stop_fd);
  } catch (const std::exception& e) {
    std::cerr << "encbench-test-server: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

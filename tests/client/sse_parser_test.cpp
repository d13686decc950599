// SSE parsing and response interpretation across arbitrary read boundaries, plus a fuzz-style
// test: random splits of valid streams must give identical events, and random garbage must never
// crash, hang or grow memory without bound.
#include <gtest/gtest.h>
#include "tests/support/sanitized.hpp"

#include <random>

#include "harness/client/response_handler.hpp"
#include "harness/client/sse_parser.hpp"

using namespace encbench::client;

namespace {

std::vector<SseEvent> parse_with_splits(const std::string& stream, const std::vector<std::size_t>& cuts, bool finish = true) {
  SseParser parser;
  std::vector<SseEvent> out;
  auto sink = [&](SseEvent&& e) { out.push_back(std::move(e)); };
  std::size_t prev = 0;
  for (std::size_t cut : cuts) {
    parser.feed(std::string_view(stream).substr(prev, cut - prev), sink);
    prev = cut;
  }
  parser.feed(std::string_view(stream).substr(prev), sink);
  if (finish) parser.finish(sink);
  return out;
}

std::vector<SseEvent> parse_whole(const std::string& stream) { return parse_with_splits(stream, {}); }

std::vector<std::size_t> random_cuts(std::size_t size, std::mt19937_64& rng) {
  std::vector<std::size_t> cuts;
  if (size == 0) return cuts;
  std::uniform_int_distribution<std::size_t> count(0, std::min<std::size_t>(size, 40));
  std::uniform_int_distribution<std::size_t> pos(0, size);
  for (std::size_t n = count(rng); n > 0; --n) cuts.push_back(pos(rng));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> streams{
      "data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n",
      "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\r\n\r\n",
      "data: {\"a\":1}\r\rdata: [DONE]\r\r",
      ": ping\n\ndata: {\"a\":\n data: 1}\n\n: another comment\ndata: [DONE]\n\n",
      "event: error\ndata: {\"message\":\"boom\"}\n\n",
      "id: 7\nretry: 100\ndata:no-space\n\ndata:  two-spaces\n\n",
      "data: {\"x\":\"line1\"}\ndata: {\"y\":2}\n\n",
      "data: tail-without-blank-line",
      "\n\n\n\ndata: a\n\n\r\n\r\n",
  };
  return streams;
}

}  // namespace

TEST(SseParser, ParsesEventsWithAllLineEndings) {
  auto lf = parse_whole(corpus()[0]);
  auto crlf = parse_whole(corpus()[1]);
  auto cr = parse_whole(corpus()[2]);
  ASSERT_EQ(lf.size(), 3u);
  ASSERT_EQ(crlf.size(), 3u);
  ASSERT_EQ(cr.size(), 2u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(lf[i].data, crlf[i].data);
  EXPECT_EQ(lf[0].data, "{\"a\":1}");
  EXPECT_EQ(cr[1].data, "[DONE]");
}

TEST(SseParser, JoinsMultiLineDataAndSkipsComments) {
  SseParser parser;
  std::vector<SseEvent> out;
  parser.feed(corpus()[3], [&](SseEvent&& e) { out.push_back(std::move(e)); });
  ASSERT_EQ(out.size(), 2u);
  // "data: 1}" after a leading space is not a data field (" data" is an unknown field name).
  EXPECT_EQ(out[0].data, "{\"a\":");
  EXPECT_EQ(parser.comment_lines(), 2u);
  auto multi = parse_whole(corpus()[6]);
  ASSERT_EQ(multi.size(), 1u);
  EXPECT_EQ(multi[0].data, "{\"x\":\"line1\"}\n{\"y\":2}");
}

TEST(SseParser, EventTypesFieldsAndSpaces) {
  auto err = parse_whole(corpus()[4]);
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0].event_type, "error");
  auto fields = parse_whole(corpus()[5]);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields[0].data, "no-space");
  EXPECT_EQ(fields[1].data, " two-spaces");  // only one leading space is removed
}

TEST(SseParser, FinishHandsOutTheUnterminatedTail) {
  auto tail = parse_whole(corpus()[7]);
  ASSERT_EQ(tail.size(), 1u);
  EXPECT_FALSE(tail[0].terminated);
  EXPECT_EQ(tail[0].data, "tail-without-blank-line");
  auto blanks = parse_whole(corpus()[8]);
  ASSERT_EQ(blanks.size(), 1u);
  EXPECT_TRUE(blanks[0].terminated);
}

TEST(SseParser, EverySingleSplitPointGivesTheSameEvents) {
  for (const auto& stream : corpus()) {
    const auto whole = parse_whole(stream);
    for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
      const auto split = parse_with_splits(stream, {cut});
      ASSERT_EQ(split.size(), whole.size()) << "stream " << stream << " cut " << cut;
      for (std::size_t i = 0; i < whole.size(); ++i) {
        EXPECT_EQ(split[i].data, whole[i].data);
        EXPECT_EQ(split[i].event_type, whole[i].event_type);
      }
    }
    // One byte at a time.
    std::vector<std::size_t> every;
    for (std::size_t i = 1; i < stream.size(); ++i) every.push_back(i);
    EXPECT_EQ(parse_with_splits(stream, every).size(), whole.size());
  }
}

TEST(SseParser, LineLengthLimitFailsInsteadOfGrowing) {
  SseParser parser(64);
  const std::string long_line = "data: " + std::string(200, 'x');
  EXPECT_FALSE(parser.feed(long_line, [](SseEvent&&) {}));
  EXPECT_TRUE(parser.failed());
  EXPECT_NE(parser.error().find("longer than 64"), std::string::npos);
}

// libFuzzer-style: random splits of valid streams are transparent; random bytes never crash.
TEST(SseParserFuzz, RandomSplitsAndGarbage) {
  std::mt19937_64 rng(12345);
  const int iterations = encbench::testing::sanitized() ? 300 : 3000;
  for (int it = 0; it < iterations; ++it) {
    const auto& stream = corpus()[rng() % corpus().size()];
    const auto whole = parse_whole(stream);
    const auto split = parse_with_splits(stream, random_cuts(stream.size(), rng));
    ASSERT_EQ(split.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) ASSERT_EQ(split[i].data, whole[i].data);

    // Garbage: random bytes biased towards SSE syntax characters.
    static const char kAlphabet[] = "data: event\r\n\n:{}[]\"DONE\x00\xff";
    std::string garbage(rng() % 300, '\0');
    for (char& c : garbage) c = (rng() % 4 == 0) ? static_cast<char>(rng()) : kAlphabet[rng() % (sizeof kAlphabet - 1)];
    RequestRecord record;
    record.http_status = 200;
    ResponseHandler handler(Backend::openai_chat, RequestMode::stream, record);
    std::size_t prev = 0;
    for (std::size_t cut : random_cuts(garbage.size(), rng)) {
      handler.on_body(std::string_view(garbage).substr(prev, cut - prev), 1000 + static_cast<long>(cut));
      prev = cut;
    }
    handler.on_body(std::string_view(garbage).substr(prev), 5000);
    handler.on_end(6000, "");
    // Whatever the bytes, the request ends either successful or failed with a reason.
    ASSERT_TRUE(record.success || !record.error.empty());
  }
}

// ---------------------------------------------------------------- response handler (vllm rules)
namespace {
std::string vllm_stream(bool with_done = true) {
  std::string s;
  s += "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
  s += "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello\"}}]}\n\n";
  s += ": keep-alive\n\n";
  s += "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" world\"},\"finish_reason\":\"length\"}]}\n\n";
  s += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":42,\"completion_tokens\":3,\"total_tokens\":45}}\n\n";
  if (with_done) s += "data: [DONE]\n\n";
  return s;
}

RequestRecord run_stream(const std::string& stream, std::size_t piece, int status = 200, RequestMode mode = RequestMode::stream,
                         bool strict = false) {
  RequestRecord record;
  record.http_status = status;
  ResponseHandler handler(Backend::openai_chat, mode, record, strict);
  encbench::Nanos t = 1000;
  for (std::size_t off = 0; off < stream.size(); off += piece) handler.on_body(std::string_view(stream).substr(off, piece), t += 10);
  handler.on_end(t + 10, "");
  return record;
}
}  // namespace

TEST(ResponseHandler, VllmStreamAtAnySplitSize) {
  const std::string stream = vllm_stream();
  for (std::size_t piece : {1u, 2u, 3u, 7u, 64u, 100000u}) {
    const RequestRecord r = run_stream(stream, piece);
    ASSERT_TRUE(r.success) << r.error;
    EXPECT_EQ(r.choices_ns.size(), 3u);  // role chunk counts (vllm's TTFT ends there)
    EXPECT_EQ(r.generated_text, "Hello world");
    EXPECT_EQ(r.usage_prompt_tokens, 42);
    EXPECT_EQ(r.usage_completion_tokens, 3);
    EXPECT_EQ(r.content_chunks, 2);
    EXPECT_TRUE(r.saw_done);
    EXPECT_EQ(r.first_choices_ns, r.choices_ns.front());
    EXPECT_EQ(r.last_choices_ns, r.choices_ns.back());  // the usage chunk does not extend latency
  }
}

TEST(ResponseHandler, FailuresCarryTheReason) {
  // vllm's rules: a 200 stream with a choices event succeeds without [DONE], and a mid-stream
  // {"error": ...} event (no choices) is skipped; both are counted, and --strict-success fails them.
  const auto no_done = run_stream(vllm_stream(false), 5);
  EXPECT_TRUE(no_done.success) << no_done.error;
  EXPECT_TRUE(no_done.incomplete_stream);
  EXPECT_EQ(run_stream(vllm_stream(false), 5, 200, RequestMode::stream, true).error,
            "stream ended without data: [DONE] (--strict-success)");
  EXPECT_FALSE(run_stream(vllm_stream(), 5).incomplete_stream);
  const std::string with_error =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"overloaded\"}}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";
  const auto err = run_stream(with_error, 4);
  EXPECT_TRUE(err.success) << err.error;
  EXPECT_EQ(err.error_events, 1);
  EXPECT_EQ(err.first_error_event, "overloaded");
  EXPECT_EQ(err.generated_text, "ab");
  EXPECT_EQ(err.choices_ns.size(), 2u);  // the error event moves no timestamp
  const auto strict = run_stream(with_error, 4, 200, RequestMode::stream, true);
  EXPECT_FALSE(strict.success);
  EXPECT_EQ(strict.error, "error event in stream: overloaded (--strict-success)");
  // An error event before any choices: vllm's "Never received a valid chunk" failure.
  EXPECT_NE(run_stream("data: {\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n", 7).error.find("Never received"),
            std::string::npos);
  const auto typed = run_stream("event: error\ndata: boom\n\n", 3);
  EXPECT_NE(typed.error.find("error event in stream: boom"), std::string::npos);
  const auto bad = run_stream("data: {\"choices\": [ nope\n\n", 2);
  EXPECT_NE(bad.error.find("malformed JSON in SSE event"), std::string::npos);
  const auto none = run_stream("data: {\"choices\":[],\"usage\":{\"completion_tokens\":0}}\n\ndata: [DONE]\n\n", 8);
  EXPECT_EQ(none.error, "Never received a valid chunk to calculate TTFT.This response will be marked as failed!");
  const auto http = run_stream("{\"error\":\"model not found\"}", 5, 404);
  EXPECT_EQ(http.error, "HTTP 404: {\"error\":\"model not found\"}");
}

TEST(ResponseHandler, NonStreamBody) {
  const std::string body = R"({"choices":[{"index":0,"message":{"role":"assistant","content":"hi there"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}})";
  const auto r = run_stream(body, 7, 200, RequestMode::non_stream);
  ASSERT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.generated_text, "hi there");
  EXPECT_EQ(r.usage_completion_tokens, 2);
  const auto bad = run_stream("{\"choices\":", 3, 200, RequestMode::non_stream);
  EXPECT_NE(bad.error.find("malformed JSON body"), std::string::npos);
}

TEST(SseParser, ManyDataLinesCannotGrowAnEventWithoutBound) {
  SseParser parser(1024);
  std::string line = "data: " + std::string(100, 'x') + "\n";
  std::size_t events = 0;
  bool ok = true;
  for (int i = 0; i < 9 && ok; ++i) ok = parser.feed(line, [&](SseEvent&&) { ++events; });
  EXPECT_TRUE(ok);  // 9 lines of 100 bytes: under the 1024-byte bound
  for (int i = 0; i < 3 && ok; ++i) ok = parser.feed(line, [&](SseEvent&&) { ++events; });
  EXPECT_FALSE(ok);
  EXPECT_EQ(parser.error(), "SSE event longer than 1024 bytes");
  EXPECT_EQ(events, 0u);
  // A terminated event of the same lines is delivered whole when it fits.
  SseParser fits(1024);
  std::string whole;
  for (int i = 0; i < 9; ++i) whole += line;
  whole += "\n";
  std::size_t data_bytes = 0;
  EXPECT_TRUE(fits.feed(whole, [&](SseEvent&& e) { data_bytes = e.data.size(); }));
  EXPECT_EQ(data_bytes, 9u * 100u + 8u);
}

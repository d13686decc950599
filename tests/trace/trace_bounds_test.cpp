// `trace analyze`'s reader bounded by what it keeps, not by the text: whitespace runs
// never reach the parser, --max-events and --max-decompressed-bytes stop the read with a message
// naming the flag, and strings, numbers or bracket runs past max_token_bytes are refused. Inputs
// are generated here (small, with small limits; the multi-GB figures are in docs/trace.md).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "harness/core/error.hpp"
#include "harness/trace_read/trace_import.hpp"
#include "harness/trace_read/trace_reader.hpp"
#include "tests/trace/trace_test_support.hpp"

using encbench::InvalidInput;
using namespace encbench::trace;
namespace fs = std::filesystem;

namespace {

std::string kernel_event(int i) {
  return R"({"ph":"X","cat":"kernel","name":"k)" + std::to_string(i % 7) + R"(","pid":0,"tid":7,"ts":)" +
         std::to_string(10 * i) + R"(,"dur":4,"args":{"device":0,"stream":7,"correlation":)" + std::to_string(i) + "}}";
}

// {"traceEvents":[e0, e1, ...]} with `padding` between the events.
std::string trace_text(int events, const std::string& padding = "") {
  std::string text = R"({"traceEvents":[)";
  for (int i = 0; i < events; ++i) text += (i ? "," + padding : padding) + kernel_event(i);
  return text + "]}";
}

RawTrace read_text(const std::string& text, const ReadLimits& limits = {}) {
  std::istringstream in(text);
  return read_raw_trace(in, "generated", limits);
}

// The InvalidInput message of reading `text` ("" when it reads).
std::string refusal(const std::string& text, const ReadLimits& limits) {
  try {
    read_text(text, limits);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

std::int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size())) * 1024;
  return -1;
}

// Writes `repeat` copies of `block` between the two halves of a one-event trace, gzipped.
void write_padded_gz(const fs::path& path, const std::string& block, int repeat) {
  gzFile out = gzopen(path.c_str(), "wb9");
  ASSERT_NE(out, nullptr);
  const std::string head = R"({"traceEvents":[)" + kernel_event(0) + ",";
  gzwrite(out, head.data(), static_cast<unsigned>(head.size()));
  for (int i = 0; i < repeat; ++i) gzwrite(out, block.data(), static_cast<unsigned>(block.size()));
  const std::string tail = kernel_event(1) + "]}";
  gzwrite(out, tail.data(), static_cast<unsigned>(tail.size()));
  gzclose(out);
}

}  // namespace

TEST(TraceBounds, LongWhitespaceRunsAreSkippedAndTheEventsStillRead) {
  // 100 KiB of mixed whitespace between every two events: the same events as without it.
  std::string padding;
  for (int i = 0; i < 100 * 1024; ++i) padding += " \n\t\r"[i % 4];
  const RawTrace padded = read_text(trace_text(20, padding));
  const RawTrace plain = read_text(trace_text(20));
  ASSERT_EQ(padded.events.size(), 20u);
  EXPECT_EQ(padded.stats.json_bytes, trace_text(20, padding).size());  // counted before skipping
  for (std::size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(padded.events[i].ts_ns, plain.events[i].ts_ns);
    EXPECT_EQ(padded.str(padded.events[i].name), plain.str(plain.events[i].name));
    EXPECT_EQ(padded.events[i].correlation, static_cast<std::int64_t>(i));
  }
  // Whitespace inside strings is data, not skipped.
  std::string spaced_name(10002, ' ');  // built in place: GCC 12 warns falsely on "k" + std::string
  spaced_name.front() = 'k';
  spaced_name.back() = 'x';
  const RawTrace named = read_text(R"({"traceEvents":[{"ph":"X","name":")" + spaced_name + R"(","ts":1,"dur":1,"pid":0,"tid":1}]})");
  ASSERT_EQ(named.events.size(), 1u);
  EXPECT_EQ(named.str(named.events[0].name), spaced_name);
}

TEST(TraceBounds, MaxEventsStopsTheReadAndSaysWhere) {
  ReadLimits limits;
  limits.max_events = 10;
  EXPECT_EQ(read_text(trace_text(10), limits).events.size(), 10u);  // exactly at the limit: read
  const std::string why = refusal(trace_text(50), limits);
  EXPECT_NE(why.find("generated: more than 10 events kept (--max-events; 0 = no limit): stopped after 11 events"),
            std::string::npos) << why;
  limits.max_events = 0;
  EXPECT_EQ(read_text(trace_text(50), limits).events.size(), 50u);
}

TEST(TraceBounds, MetadataNamesCountAsKept) {
  std::string text = R"({"traceEvents":[)";
  for (int i = 0; i < 30; ++i)
    text += (i ? "," : "") + std::string(R"({"ph":"M","name":"process_name","pid":)") + std::to_string(i) +
            R"(,"args":{"name":"p"}})";
  text += "]}";
  ReadLimits limits;
  limits.max_events = 20;
  EXPECT_NE(refusal(text, limits).find("more than 20 events kept"), std::string::npos);
}

TEST(TraceBounds, DecompressedBytesLimitStopsAGzipBomb) {
  // 64 MiB of spaces in a ~64 KiB .gz: refused past 1 MiB of text; read in full without a limit,
  // and without the parser holding the whitespace (it held all of it before: 1 GB -> 2.2 GiB).
  const fs::path dir = support::scratch_dir("bounds");
  const fs::path bomb = dir / "bomb.json.gz";
  write_padded_gz(bomb, std::string(1 << 20, ' '), 64);
  EXPECT_LT(fs::file_size(bomb), 1u << 20);
  ReadLimits limits;
  limits.max_decompressed_bytes = 1 << 20;
  try {
    read_raw_trace_file(bomb, limits);
    ADD_FAILURE() << "a 64 MiB text passed a 1 MiB limit";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 1048576 bytes (--max-decompressed-bytes; 0 = no limit)"),
              std::string::npos) << e.what();
  }
  std::ofstream("/proc/self/clear_refs") << "5";
  const std::int64_t rss_before = status_bytes("VmRSS:");
  const RawTrace raw = read_raw_trace_file(bomb);
  const std::int64_t growth = status_bytes("VmHWM:") - rss_before;
  EXPECT_EQ(raw.events.size(), 2u);
  EXPECT_GT(raw.stats.json_bytes, 64u << 20);
  EXPECT_TRUE(raw.stats.gzip);
  EXPECT_LT(growth, std::int64_t{24} << 20) << "reading 64 MiB of whitespace grew RSS by " << (growth >> 20) << " MiB";
  fs::remove_all(dir);
}

TEST(TraceBounds, LongTokensAndBracketRunsAreRefusedNotHeld) {
  ReadLimits limits;
  limits.max_token_bytes = 4096;
  const std::string long_name = R"({"traceEvents":[{"ph":"X","name":")" + std::string(5000, 'n') + R"(","ts":1,"dur":1}]})";
  EXPECT_NE(refusal(long_name, limits).find("a string longer than 4096 bytes"), std::string::npos) << refusal(long_name, limits);
  const std::string long_number = R"({"traceEvents":[{"ph":"X","name":"k","ts":1)" + std::string(5000, '0') + R"(,"dur":1}]})";
  EXPECT_NE(refusal(long_number, limits).find("a number or literal longer than 4096 bytes"), std::string::npos);
  // Empty arrays never start a value: the parser's token text would hold all of them.
  std::string brackets = R"({"traceEvents":[)" + kernel_event(0) + R"(],"x":[)";
  for (int i = 0; i < 3000; ++i) brackets += "[],";
  brackets += "[]]}";
  const std::string why = refusal(brackets, limits);
  EXPECT_NE(why.find("without a value for more than 4096 bytes"), std::string::npos) << why;
  EXPECT_NE(why.find("refused at byte "), std::string::npos) << why;
  // Below the limit all three read.
  limits.max_token_bytes = 1 << 20;
  EXPECT_EQ(refusal(long_name, limits), "");
  EXPECT_EQ(refusal(brackets, limits), "");
}

TEST(TraceBounds, CliExits2WithTheLimitNamed) {
  const fs::path dir = support::scratch_dir("bounds_cli");
  const fs::path trace = dir / "t.json";
  std::ofstream(trace) << trace_text(40);
  const std::string base = std::string(ENCBENCH_CLI_PATH) + " trace analyze '" + trace.string() + "' ";
  const auto run = [&](const std::string& flags) {
    const int status = std::system((base + flags + " > '" + (dir / "log").string() + "' 2>&1").c_str());
    std::ifstream in(dir / "log");
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                          std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
  };
  const auto [rc_events, log_events] = run("--max-events 5");
  EXPECT_EQ(rc_events, 2) << log_events;
  EXPECT_NE(log_events.find("more than 5 events kept (--max-events"), std::string::npos) << log_events;
  const auto [rc_bytes, log_bytes] = run("--max-decompressed-bytes 100");
  EXPECT_EQ(rc_bytes, 2) << log_bytes;
  EXPECT_NE(log_bytes.find("--max-decompressed-bytes"), std::string::npos) << log_bytes;
  const auto [rc_ok, log_ok] = run("--max-events 40");
  EXPECT_EQ(rc_ok, 0) << log_ok;
  fs::remove_all(dir);
}

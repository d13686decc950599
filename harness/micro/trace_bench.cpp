// Parse throughput of `encbench trace analyze`'s streaming reader on generated Kineto traces
// (generated here, never committed). Reports MB/s of JSON, events, and the process's peak RSS.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness/micro/registry.hpp"
#include "harness/trace/synthetic_trace.hpp"
#include "harness/trace_read/trace_import.hpp"

namespace encbench::micro {
namespace {

void trace_parse(benchmark::State& state, bool import_too) {
  const auto megabytes = static_cast<std::uint64_t>(state.range(0));
  // ENCBENCH_TRACE_BENCH_FILE=path keeps the generated trace there (to time `trace analyze` on it).
  const char* keep = std::getenv("ENCBENCH_TRACE_BENCH_FILE");
  const auto path = keep != nullptr && *keep != '\0'
                        ? std::filesystem::path(keep)
                        : std::filesystem::temp_directory_path() / ("encbench_trace_bench_" + std::to_string(::getpid()) +
                                                                     "_" + std::to_string(megabytes) + ".json");
  const trace::SyntheticTraceInfo info = trace::write_synthetic_kineto_trace(path, megabytes * 1'000'000);
  std::size_t ops = 0;
  double peak = 0;
  for (auto _ : state) {
    if (import_too) {
      const trace::ImportedTrace t = trace::import_trace_file(path);
      ops = t.counts.device_ops;
      peak = t.read.peak_rss_mib;
    } else {
      const trace::RawTrace raw = trace::read_raw_trace_file(path);
      ops = raw.events.size();
      peak = raw.stats.peak_rss_mib;
    }
    benchmark::DoNotOptimize(ops);
  }
  if (keep == nullptr || *keep == '\0') std::filesystem::remove(path);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * info.bytes));
  state.counters["events"] = static_cast<double>(info.events);
  state.counters["kept"] = static_cast<double>(ops);
  state.counters["peak_rss_mib"] = peak;
}

}  // namespace

void register_trace_benchmarks() {
  // Arg: trace size in MB of JSON (32 by default; ENCBENCH_TRACE_BENCH_MB=300 for a large trace).
  // Read = SAX reduce only; import = read + build the per-device timelines.
  std::int64_t megabytes = 32;
  if (const char* env = std::getenv("ENCBENCH_TRACE_BENCH_MB"); env != nullptr && std::atoll(env) > 0) {
    megabytes = std::atoll(env);
  }
  benchmark::RegisterBenchmark("trace_read_kineto", [](benchmark::State& s) { trace_parse(s, false); })
      ->Arg(megabytes)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2);
  benchmark::RegisterBenchmark("trace_import_kineto", [](benchmark::State& s) { trace_parse(s, true); })
      ->Arg(megabytes)
      ->Unit(benchmark::kMillisecond)
      ->Iterations(2);
}

}  // namespace encbench::micro

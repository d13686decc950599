// encbench-instr: instruction counts of fixed, small cases under Valgrind's callgrind: numbers a
// shared, loaded CI runner cannot move (docs/reports.md, "Deterministic metrics").
//
//   encbench-instr [--out FILE] [--filter REGEX] [--forwards N] [--list] [--valgrind PATH]
//                  [--keep-dumps DIR]
//
// Run normally, it re-runs itself under `valgrind --tool=callgrind --collect-atstart=no`, where
// each case switches collection on only around its measured region (set-up, warm-up and the
// simulated device's own bookkeeping are excluded, harness/core/instrument.hpp) and dumps its
// counts by name; it then reads the dump files and writes Google Benchmark JSON (one iteration row
// per case, counters only), which `encbench compare` reads like encbench-micro's output. Every
// counter name contains "instructions", which makes compare judge it as deterministic.
//
// Cases (small shapes, so the whole run stays a few seconds under Valgrind):
//   instr/kernels/attention/{fused_varlen,flash_unpad}/d80/{1x256,4x64_windows}  one call, 1 thread
//   instr/encoder/forward/tiny-qwen2.5-vl/sim:ascend-910b/{baseline,optimized}   host path per forward
// Encoder counters: host_instructions_per_forward, host_instructions_pre_layers (input prep before
// layer 0), host_instructions_layer_<i>, host_instructions_post_layers (merger, final sync);
// syncs_per_forward (exact, not an instruction count).
//
// Exit status: 0 ok, 2 invalid flags, 3 Valgrind missing or failed.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/core/error.hpp"
#include "harness/core/instrument.hpp"
#include "harness/encoder/encoder.hpp"
#include "kernels/attention.hpp"
#include "kernels/thread_pool.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace encbench;

struct Options {
  std::string out;
  std::string filter;
  int forwards = 3;
  bool list = false;
  bool child = false;
  std::string valgrind = "valgrind";
  std::string keep_dumps;
};

// One case: `run` does its set-up, then calls instrument::begin()/dump()/end() itself.
struct Case {
  std::string name;
  std::function<void(const Case&, const Options&)> run;
};

// ---- kernels --------------------------------------------------------------------------------

std::vector<float> ramp(std::size_t n, float phase) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

void attention_case(const std::string& dump_name, bool fused, const std::vector<std::int32_t>& lens) {
  using namespace encbench::kernels;
  constexpr int kHeads = 4, kHeadDim = 80;
  ThreadPool pool(1);  // one worker: no spin or scheduling differences between runs
  Workspace workspace;
  std::vector<std::int32_t> cu{0};
  for (auto len : lens) cu.push_back(cu.back() + len);
  const std::int64_t tokens = cu.back();
  const int width = fused ? kHeadDim : npu_padded_head_dim(kHeadDim);
  const std::size_t n = static_cast<std::size_t>(tokens) * kHeads * width;
  const auto q = ramp(n, 0.1f), k = ramp(n, 0.2f), v = ramp(n, 0.3f);
  std::vector<float> out(n);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const auto segments = static_cast<std::int64_t>(lens.size());
  VarlenAttentionArgs va;
  va.q = q.data(), va.k = k.data(), va.v = v.data(), va.out = out.data();
  va.cu_seqlens = cu.data(), va.num_segments = segments, va.total_tokens = tokens;
  va.num_heads = kHeads, va.num_kv_heads = kHeads, va.head_dim = kHeadDim, va.scale = scale;
  FlashUnpadArgs ua;
  ua.q = q.data(), ua.k = k.data(), ua.v = v.data(), ua.out = out.data();
  ua.seq_lens = lens.data(), ua.num_segments = segments, ua.total_tokens = tokens;
  ua.num_heads = kHeads, ua.num_kv_heads = kHeads, ua.head_dim_padded = width;
  ua.head_dim = kHeadDim, ua.scale = scale;
  auto call = [&] {
    if (fused) fused_varlen(va, pool, Isa::best, &workspace, AttentionTiling{});
    else flash_unpad(ua, pool, Isa::best, &workspace, AttentionTiling{});
  };
  call();  // warm-up: workspace allocation
  instrument::begin();
  call();
  instrument::end();
  instrument::dump(dump_name);
}

// ---- encoder host path ----------------------------------------------------------------------

void encoder_case(const Case& c, const Options& o, const std::string& model, const std::string& preset) {
  device::DeviceOptions options;
  options.spec = "sim:ascend-910b";
  options.clock = device::ClockMode::virtual_time;
  // Modelled host time (the default, host_model.hpp) instead of the thread's CPU time: the
  // virtual timeline, and so every branch that asks whether an event has completed, is then the
  // same in every run (CPU time under Valgrind is also ~50x inflated and would mean nothing).
  options.host_time = device::HostTime::model;
  auto dev = device::make_device(options);
  encoder::EncoderConfig cfg;
  cfg.model = encoder::load_model(model);
  cfg.toggles = encoder::preset(preset);
  cfg.keep_host_weights = false;
  const int depth = cfg.model.depth;
  // Boundaries: dump what the host did since the previous boundary under the part's name.
  cfg.layer_boundary = [&c, depth](int layer) {
    if (!instrument::detail::measuring.load()) return;
    if (layer == 0) instrument::dump(c.name + "#pre");
    else if (layer > 0) instrument::dump(c.name + "#layer_" + std::to_string(layer - 1));
    else instrument::dump(c.name + "#post");
    (void)depth;
  };
  encoder::EncoderRunner runner(cfg, *dev);
  const std::vector<vision::GridTHW> grids{encoder::grid_for(encoder::parse_image_spec("448x448"), cfg.model)};
  (void)runner.forward(grids);  // warm-up: workspaces, allocator cache, value caches
  std::size_t syncs = 0;
  for (int f = 0; f < o.forwards; ++f) {
    instrument::begin();
    const encoder::ForwardReport r = runner.forward(grids);
    instrument::end();
    syncs += r.syncs;
  }
  // The syncs ride along as a dump name (the child has no other channel back).
  instrument::dump(c.name + "#syncs=" + std::to_string(syncs));
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  struct Layout { const char* name; std::vector<std::int32_t> lens; };
  const std::vector<Layout> layouts{{"1x256", {256}}, {"4x64_windows", {64, 64, 64, 64}}};
  for (bool fused : {true, false})
    for (const Layout& l : layouts) {
      const std::string name = std::string("instr/kernels/attention/") + (fused ? "fused_varlen" : "flash_unpad") +
                               "/d80/" + l.name;
      cases.push_back({name, [fused, lens = l.lens](const Case& c, const Options&) {
                         attention_case(c.name, fused, lens);
                       }});
    }
  for (const char* preset : {"baseline", "optimized"}) {
    const std::string model = "tiny-qwen2.5-vl";
    cases.push_back({std::string("instr/encoder/forward/") + model + "/sim:ascend-910b/" + preset,
                     [model, preset = std::string(preset)](const Case& c, const Options& o) {
                       encoder_case(c, o, model, preset);
                     }});
  }
  return cases;
}

std::vector<Case> selected(const Options& o) {
  std::vector<Case> out;
  const std::regex re(o.filter.empty() ? ".*" : o.filter);
  for (auto& c : all_cases())
    if (std::regex_search(c.name, re)) out.push_back(std::move(c));
  return out;
}

// ---- parent: run the child under callgrind, read the dumps -----------------------------------

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

struct Dump {
  std::string trigger;  // the client request's name
  double instructions = 0;
};

// A callgrind dump: "desc: Trigger: Client Request: NAME" and "summary: N" / "totals: N".
Dump read_dump(const fs::path& path) {
  std::ifstream in(path);
  Dump d;
  std::string line;
  const std::string trigger = "desc: Trigger: Client Request: ";
  bool have_total = false;
  while (std::getline(in, line)) {
    if (line.rfind(trigger, 0) == 0) d.trigger = line.substr(trigger.size());
    else if (!have_total && (line.rfind("summary:", 0) == 0 || line.rfind("totals:", 0) == 0)) {
      std::istringstream s(line.substr(line.find(':') + 1));
      s >> d.instructions;
      have_total = true;
    }
  }
  return d;
}

// The run's directory, with `src`, a link to the source tree. A fixed-length name (pid
// zero-padded): the child reads its model and device files through `dir/src`, so the paths it
// allocates have the same length whichever checkout it was built from. Heap layout depends on
// them, and per-layer counts moved by up to 1.2 % between a checkout under /work and one under
// /tmp without this.
fs::path make_run_dir(const Options& o) {
  char pid[16];
  std::snprintf(pid, sizeof pid, "%010d", static_cast<int>(::getpid()));
  const fs::path dir = o.keep_dumps.empty() ? fs::temp_directory_path() / (std::string("encbench-instr.") + pid)
                                            : fs::path(o.keep_dumps);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const char* env_src = std::getenv("ENCBENCH_SOURCE_DIR");
  const fs::path source = env_src && *env_src ? fs::path(env_src) : fs::path(ENCBENCH_INSTR_SOURCE_DIR);
  fs::create_directory_symlink(fs::absolute(source), dir / "src");
  return dir;
}

// This executable as the child (--child) under callgrind, dumping into `dir`; false (with the
// log's head on stderr) when valgrind failed.
bool run_child_under_valgrind(const Options& o, const fs::path& dir) {
  const std::string src_link = (dir / "src").string();
  const std::string cmd = "ENCBENCH_SOURCE_DIR=" + shell_quote(src_link) + " ENCBENCH_SCENARIOS_DIR=" +
                          shell_quote(src_link + "/scenarios") + " " + shell_quote(o.valgrind) +
                          " --tool=callgrind --collect-atstart=no --dump-instr=no --compress-strings=no"
                          " --callgrind-out-file=" + shell_quote((dir / "callgrind.out").string()) + " " +
                          shell_quote(fs::canonical("/proc/self/exe").string()) + " --child --forwards " +
                          std::to_string(o.forwards) + " --filter " + shell_quote(o.filter.empty() ? ".*" : o.filter) +
                          " >" + shell_quote((dir / "valgrind.log").string()) + " 2>&1";
  const int rc = std::system(cmd.c_str());
  if (rc == 0) return true;
  std::cerr << "encbench-instr: valgrind run failed (status " << rc << "); see " << (dir / "valgrind.log")
            << (o.keep_dumps.empty() ? " (pass --keep-dumps DIR to keep it)" : "") << "\n";
  std::ifstream log(dir / "valgrind.log");
  std::string line;
  for (int i = 0; i < 20 && std::getline(log, line); ++i) std::cerr << "  " << line << "\n";
  return false;
}

// The dumps summed per name (a case's several forwards dump each part once per forward).
std::map<std::string, double> instructions_by_dump(const fs::path& dir) {
  std::map<std::string, double> sums;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("callgrind.out", 0) != 0) continue;
    const Dump d = read_dump(entry.path());
    if (d.trigger.empty()) continue;
    sums[d.trigger] += d.instructions;
  }
  return sums;
}

// An encoder case's counters into `row`: per forward, in total and by part, and its syncs. False
// when callgrind counted nothing for it.
bool add_encoder_counts(json& row, const Case& c, const Options& o, const std::map<std::string, double>& sums) {
  const double n = o.forwards;
  double total = 0;
  json parts = json::object();
  for (const auto& [key, value] : sums) {
    if (key.rfind(c.name + "#", 0) != 0) continue;
    const std::string part = key.substr(c.name.size() + 1);
    if (part.rfind("syncs=", 0) == 0) {
      row["syncs_per_forward"] = std::stod(part.substr(6)) / n;
      continue;
    }
    total += value;
    parts["host_instructions_" + (part == "pre" ? std::string("pre_layers")
                                  : part == "post" ? std::string("post_layers") : part)] = value / n;
  }
  if (total == 0) return false;
  row["iterations"] = o.forwards;
  row["host_instructions_per_forward"] = total / n;
  for (const auto& [k, v] : parts.items()) row[k] = v;
  return true;
}

// One Google Benchmark row per case; nullopt (named on stderr) when a case has no counts.
std::optional<json> benchmark_rows(const Options& o, const std::vector<Case>& cases,
                                   const std::map<std::string, double>& sums, const fs::path& dir) {
  json benchmarks = json::array();
  std::size_t family = 0;
  for (const Case& c : cases) {
    json row = {{"name", c.name}, {"family_index", family++}, {"per_family_instance_index", 0},
                {"run_name", c.name}, {"run_type", "iteration"}, {"repetitions", 1},
                {"repetition_index", 0}, {"threads", 1}};
    bool counted = false;
    if (c.name.rfind("instr/encoder/", 0) == 0) {
      counted = add_encoder_counts(row, c, o, sums);
    } else if (const auto it = sums.find(c.name); it != sums.end() && it->second != 0) {
      row["iterations"] = 1;
      row["instructions"] = it->second;
      counted = true;
    }
    if (!counted) {
      std::cerr << "encbench-instr: no counts for " << c.name << "; see " << (dir / "valgrind.log") << "\n";
      return std::nullopt;
    }
    benchmarks.push_back(std::move(row));
  }
  return benchmarks;
}

// Writes `doc` to --out (if given) and a one-line summary per case on stdout; 2 when --out fails.
int write_and_summarise(const json& doc, const Options& o) {
  if (!o.out.empty()) {
    std::ofstream f(o.out);
    if (!f) {
      std::cerr << "encbench-instr: cannot write " << o.out << "\n";
      return 2;
    }
    f << doc.dump(2) << "\n";
  }
  for (const auto& row : doc["benchmarks"]) {
    const double v = row.contains("instructions") ? row["instructions"].get<double>()
                                                  : row["host_instructions_per_forward"].get<double>();
    std::cout << row["name"].get<std::string>() << "  " << static_cast<long long>(v)
              << (row.contains("instructions") ? " instructions\n" : " host instructions per forward\n");
  }
  return 0;
}

int run_parent(const Options& o, const std::vector<Case>& cases) {
  const fs::path dir = make_run_dir(o);
  const double t0 = static_cast<double>(std::time(nullptr));
  if (!run_child_under_valgrind(o, dir)) {
    if (o.keep_dumps.empty()) fs::remove_all(dir);
    return 3;
  }
  const std::optional<json> benchmarks = benchmark_rows(o, cases, instructions_by_dump(dir), dir);
  if (!benchmarks) return 3;  // the directory stays: the message points at its log
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  json doc = {{"context",
               {{"executable", "encbench-instr"},
                {"host_name", host},
                {"measure", "instructions (Ir) under valgrind --tool=callgrind, per call / per forward"},
                {"valgrind_seconds", static_cast<double>(std::time(nullptr)) - t0},
                {"json_schema_version", 1}}},
              {"benchmarks", *benchmarks}};
  if (o.keep_dumps.empty()) fs::remove_all(dir);
  return write_and_summarise(doc, o);
}

const char* kUsage =
    "usage: encbench-instr [--out FILE] [--filter REGEX] [--forwards N] [--list] [--valgrind PATH]\n"
    "                      [--keep-dumps DIR]\n"
    "Instruction counts of fixed small cases under valgrind --tool=callgrind, written as Google\n"
    "Benchmark JSON (counters only) for `encbench compare`.\n"
    "  --out FILE         write the JSON here (default: only print a summary)\n"
    "  --filter REGEX     run the cases whose name matches (default: all)\n"
    "  --forwards N       counted encoder forwards per case, after one warm-up (default 3)\n"
    "  --list             print the case names and exit\n"
    "  --valgrind PATH    the valgrind executable (default: valgrind on PATH)\n"
    "  --keep-dumps DIR   keep callgrind's dump files and log in DIR\n"
    "  -h, --help         this text\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      require(i + 1 < argc, "encbench-instr: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") o.out = value();
    else if (a == "--filter") o.filter = value();
    else if (a == "--forwards") {
      const std::string v = value();
      require(!v.empty() && v.find_first_not_of("0123456789") == std::string::npos && std::stoi(v) >= 1 &&
                  std::stoi(v) <= 1000,
              "encbench-instr: --forwards must be an integer in [1, 1000], got '" + v + "'");
      o.forwards = std::stoi(v);
    } else if (a == "--list") o.list = true;
    else if (a == "--valgrind") o.valgrind = value();
    else if (a == "--keep-dumps") o.keep_dumps = value();
    else if (a == "--child") o.child = true;
    else throw InvalidInput("encbench-instr: unknown argument '" + a + "' (see --help)");
  }
  try {
    (void)std::regex(o.filter);
  } catch (const std::regex_error& e) {
    throw InvalidInput("encbench-instr: bad --filter '" + o.filter + "': " + e.what());
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      std::cout << kUsage;
      return 0;
    }
  try {
    const Options o = parse(argc, argv);
    const std::vector<Case> cases = selected(o);
    if (o.list) {
      for (const auto& c : cases) std::cout << c.name << "\n";
      return 0;
    }
    require(!cases.empty(), "encbench-instr: --filter '" + o.filter + "' matches no case (see --list)");
    if (o.child) {
      if (!instrument::running_on_valgrind())
        std::cerr << "encbench-instr: --child outside valgrind: nothing is counted\n";
      for (const auto& c : cases) c.run(c, o);
      return 0;
    }
    if (!instrument::available()) {
      std::cerr << "encbench-instr: built without <valgrind/callgrind.h>; install valgrind and rebuild\n";
      return 3;
    }
    return run_parent(o, cases);
  } catch (const InvalidInput& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "encbench-instr: " << e.what() << "\n";
    return 3;
  }
}

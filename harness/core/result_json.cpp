#include "harness/core/result_json.hpp"

#include <cctype>
#include <string_view>

#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "harness/core/error.hpp"
#include "harness/core/version.hpp"

namespace encbench {

MachineInfo probe_machine() {
  MachineInfo info;
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) info.cpu_model = line.substr(colon + 2);
      break;
    }
  }
  info.logical_cores = std::thread::hardware_concurrency();
  double loads[1];
  if (getloadavg(loads, 1) == 1) info.load_avg_1m = loads[0];
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) info.hostname = host;
  struct utsname uts {};
  if (uname(&uts) == 0) info.os = std::string(uts.sysname) + " " + uts.release;
  return info;
}

nlohmann::json to_json(const MachineInfo& m) {
  return {{"cpu_model", m.cpu_model},
          {"logical_cores", m.logical_cores},
          {"load_avg_1m", m.load_avg_1m},
          {"hostname", m.hostname},
          {"os", m.os}};
}

std::string utc_timestamp_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json make_result_envelope(const std::string& schema, int schema_version,
                                    const std::vector<std::string>& argv,
                                    const std::string& device_kind) {
  nlohmann::json machine = to_json(probe_machine());
  machine["device_kind"] = device_kind;
  return {{"schema", schema},
          {"schema_version", schema_version},
          {"encbench_version", kVersion},
          {"git_sha", kGitSha},
          {"argv", argv},
          {"machine", machine},
          {"created_utc", utc_timestamp_iso8601()}};
}

void write_json_file(const std::filesystem::path& path, const nlohmann::json& value, int indent) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw InvalidInput("cannot write " + path.string() + ": " + std::strerror(errno));
    out << value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    out.flush();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      throw InvalidInput("cannot write " + path.string() + ": write failed");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw InvalidInput("cannot write " + path.string() + ": " + ec.message());
  }
}

std::string read_file_maybe_gz(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput("cannot read " + path.string() + ": " + std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  std::string data = buf.str();
  const bool gz = data.size() >= 2 && static_cast<unsigned char>(data[0]) == 0x1f &&
                  static_cast<unsigned char>(data[1]) == 0x8b;
  if (!gz) return data;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw InvalidInput("cannot open gzip file " + path.string());
  std::string out;
  char chunk[1 << 16];
  int n;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) out.append(chunk, static_cast<size_t>(n));
  int errnum = 0;
  const char* msg = gzerror(f, &errnum);
  // Copied before gzclose, which frees the message (found by tests/fuzz/fuzz_result_json: a
  // corrupt .gz result file was a heap-use-after-free).
  const std::string message = msg ? msg : "?";
  gzclose(f);
  if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END))
    throw InvalidInput("corrupt gzip file " + path.string() + ": " + message);
  return out;
}

std::string non_finite_to_null(const std::string& text) {
  static constexpr std::string_view kTokens[] = {"-Infinity", "Infinity", "-nan", "-NaN", "NaN", "nan",
                                                 "-inf", "inf"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  char last_structural = 0;  // last non-space character outside strings
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      last_structural = c;
      continue;
    }
    if (last_structural == ':' || last_structural == ',' || last_structural == '[') {
      bool replaced = false;
      for (std::string_view token : kTokens) {
        if (text.compare(i, token.size(), token) != 0) continue;
        const std::size_t end = i + token.size();
        const bool boundary = end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
        if (!boundary) continue;
        out += "null";
        i = end - 1;
        last_structural = 'l';
        replaced = true;
        break;
      }
      if (replaced) continue;
    }
    out += c;
    if (!std::isspace(static_cast<unsigned char>(c))) last_structural = c;
  }
  return out;
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) throw InvalidInput("no such file: " + path.string());
  const std::string text = read_file_maybe_gz(path);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e400
    // Google Benchmark writes nan/inf counters (a CV of all-zero values) and Python's json writes
    // NaN/Infinity: neither is JSON. Read them as null (no value) rather than refuse the file.
    const nlohmann::json lenient = nlohmann::json::parse(non_finite_to_null(text), nullptr, false);
    if (!lenient.is_discarded()) return lenient;
    throw InvalidInput(path.string() + " is not valid JSON: " + e.what());
  }
}

}  // namespace encbench

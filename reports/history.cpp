#include "reports/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "harness/core/error.hpp"
#include "harness/core/glob.hpp"
#include "harness/core/result_json.hpp"
#include "reports/compare.hpp"

namespace encbench::reports {

std::filesystem::path default_history_path() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg)
    return std::filesystem::path(xdg) / "encbench" / "history.sqlite";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".local" / "share" / "encbench" / "history.sqlite";
  throw InvalidInput("neither XDG_DATA_HOME nor HOME is set: pass --history FILE");
}

std::string series_key(const RunResult& run) {
  return to_string(run.kind) + "|" + run.identity.model + "|" + run.identity.device + "|" +
         run.identity.dataset + "|" + run.identity.scenario;
}

namespace {

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK)
      throw InvalidInput(std::string("history database: ") + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Statement& bind_null(int i) {
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw InvalidInput(std::string("history database: ") + sqlite3_errmsg(db_));
  }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw InvalidInput("history database: " + msg);
  }
}

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  recorded_utc TEXT NOT NULL, created_utc TEXT, git_sha TEXT,
  kind TEXT NOT NULL, model TEXT, device TEXT, dataset TEXT, scenario TEXT,
  series TEXT NOT NULL, source TEXT, hostname TEXT, machine TEXT, gate_status TEXT);
CREATE INDEX IF NOT EXISTS runs_series ON runs(series, id);
CREATE TABLE IF NOT EXISTS metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL, label TEXT, unit TEXT,
  grp TEXT, better TEXT, value REAL, text TEXT);
CREATE INDEX IF NOT EXISTS metrics_run ON metrics(run_id);
CREATE INDEX IF NOT EXISTS metrics_name ON metrics(name);
CREATE TABLE IF NOT EXISTS baseline_resets (
  id INTEGER PRIMARY KEY AUTOINCREMENT, recorded_utc TEXT NOT NULL, series TEXT NOT NULL,
  after_run_id INTEGER NOT NULL, reason TEXT);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
INSERT OR IGNORE INTO meta VALUES ('schema', 'encbench-history'), ('schema_version', '1');
)sql";

MetricGroup group_from(const std::string& s) {
  for (auto g : {MetricGroup::throughput, MetricGroup::latency, MetricGroup::device,
                 MetricGroup::exact, MetricGroup::info})
    if (to_string(g) == s) return g;
  return MetricGroup::info;
}

Better better_from(const std::string& s) {
  if (s == "lower") return Better::lower;
  if (s == "higher") return Better::higher;
  return Better::none;
}

ResultKind kind_from(const std::string& s) {
  for (auto k : {ResultKind::serving, ResultKind::encode, ResultKind::ab, ResultKind::gbench, ResultKind::preset_ab})
    if (to_string(k) == s) return k;
  throw InvalidInput("history database: unknown kind '" + s + "'");
}

constexpr const char* kRunColumns =
    "id, recorded_utc, created_utc, git_sha, kind, model, device, dataset, scenario, series, source, hostname, "
    "gate_status";

HistoryRun read_run_row(const Statement& st) {
  HistoryRun h;
  h.id = st.integer(0);
  h.recorded_utc = st.text(1);
  h.created_utc = st.text(2);
  h.git_sha = st.text(3);
  h.run.kind = kind_from(st.text(4));
  h.run.identity = {st.text(5), st.text(6), st.text(7), st.text(8)};
  h.series = st.text(9);
  h.source = st.text(10);
  h.hostname = st.text(11);
  h.gate_status = st.text(12);
  h.run.git_sha = h.git_sha;
  h.run.created_utc = h.created_utc;
  h.run.source = "history run #" + std::to_string(h.id);
  h.run.producer = "history";
  return h;
}

void load_metrics(sqlite3* db, HistoryRun& h) {
  Statement st(db, "SELECT name, label, unit, grp, better, value, text FROM metrics WHERE run_id = ? ORDER BY rowid");
  st.bind(1, h.id);
  while (st.step()) {
    Metric m;
    m.name = st.text(0);
    m.label = st.text(1);
    m.unit = st.text(2);
    m.group = group_from(st.text(3));
    m.better = better_from(st.text(4));
    m.value = st.real(5);
    if (!st.is_null(6)) m.text = st.text(6);
    h.run.metrics.push_back(std::move(m));
  }
}

}  // namespace

History::History(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw InvalidInput("cannot open history " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db_, 10000);  // CI jobs on one machine may record concurrently
  try {
    exec(db_, kSchema);
  } catch (const InvalidInput& e) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw InvalidInput(path.string() + " is not a usable encbench history: " + e.what());
  }
}

History::~History() { sqlite3_close(db_); }

std::int64_t History::record(const RunResult& run, const std::string& git_sha, const std::string& gate_status) {
  exec(db_, "BEGIN IMMEDIATE");
  try {
    Statement st(db_,
                 "INSERT INTO runs (recorded_utc, created_utc, git_sha, kind, model, device, dataset, "
                 "scenario, series, source, hostname, machine, gate_status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    const std::string hostname = run.machine.is_object()
                                     ? run.machine.value("hostname", run.machine.value("host_name", std::string()))
                                     : std::string();
    st.bind(1, utc_timestamp_iso8601())
        .bind(2, run.created_utc)
        .bind(3, git_sha.empty() ? run.git_sha : git_sha)
        .bind(4, to_string(run.kind))
        .bind(5, run.identity.model)
        .bind(6, run.identity.device)
        .bind(7, run.identity.dataset)
        .bind(8, run.identity.scenario)
        .bind(9, series_key(run))
        .bind(10, run.source)
        .bind(11, hostname)
        .bind(12, run.machine.is_null() ? std::string("{}") : run.machine.dump())
        .bind(13, gate_status);
    st.step();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    for (const auto& m : run.metrics) {
      Statement ins(db_, "INSERT INTO metrics (run_id, name, label, unit, grp, better, value, text) VALUES (?,?,?,?,?,?,?,?)");
      ins.bind(1, id).bind(2, m.name).bind(3, m.label).bind(4, m.unit).bind(5, to_string(m.group))
          .bind(6, to_string(m.better)).bind(7, m.value);
      if (m.text) ins.bind(8, *m.text);
      else ins.bind_null(8);
      ins.step();
    }
    exec(db_, "COMMIT");
    return id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::int64_t History::reset_point(const std::string& series) const {
  Statement st(db_, "SELECT COALESCE(MAX(after_run_id), 0) FROM baseline_resets WHERE series = ?");
  st.bind(1, series);
  return st.step() ? st.integer(0) : 0;
}

std::vector<HistoryRun> History::list(const std::string& series_glob, std::size_t last_n) const {
  std::vector<HistoryRun> out;
  Statement st(db_, (std::string("SELECT ") + kRunColumns + " FROM runs ORDER BY id DESC").c_str());
  std::map<std::string, std::int64_t> resets;
  while (st.step()) {
    HistoryRun h = read_run_row(st);
    if (!glob_one(series_glob, h.series)) continue;
    if (!resets.count(h.series)) resets[h.series] = reset_point(h.series);
    h.before_reset = h.id <= resets[h.series];
    out.push_back(std::move(h));
    if (last_n && out.size() >= last_n) break;
  }
  for (auto& h : out) load_metrics(db_, h);
  return out;
}

std::vector<RunResult> History::baseline_for(const RunResult& run, std::size_t last_n) const {
  require(last_n > 0, "history:N needs N >= 1");
  const std::string series = series_key(run);
  const std::int64_t after = reset_point(series);
  Statement st(db_, (std::string("SELECT ") + kRunColumns +
                     " FROM runs WHERE series = ? AND id > ? AND COALESCE(gate_status, '') != 'fail' "
                     "ORDER BY id DESC LIMIT ?").c_str());
  st.bind(1, series).bind(2, after).bind(3, static_cast<std::int64_t>(last_n));
  std::vector<HistoryRun> rows;
  while (st.step()) rows.push_back(read_run_row(st));
  std::vector<RunResult> out;
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) {
    load_metrics(db_, *it);
    out.push_back(std::move(it->run));
  }
  if (out.empty())
    throw InvalidInput("history " + path_.string() + " has no runs of this series since its last baseline reset: " +
                       series + " (record some with 'encbench history record' or 'compare --history')");
  return out;
}

std::size_t History::reset_baseline(const std::string& series_glob, const std::string& reason) {
  std::set<std::string> series;
  {
    Statement st(db_, "SELECT DISTINCT series FROM runs");
    while (st.step())
      if (glob_one(series_glob, st.text(0))) series.insert(st.text(0));
  }
  std::int64_t last_id = 0;
  {
    Statement st(db_, "SELECT COALESCE(MAX(id), 0) FROM runs");
    if (st.step()) last_id = st.integer(0);
  }
  exec(db_, "BEGIN IMMEDIATE");
  try {
    for (const auto& s : series) {
      Statement ins(db_, "INSERT INTO baseline_resets (recorded_utc, series, after_run_id, reason) VALUES (?,?,?,?)");
      ins.bind(1, utc_timestamp_iso8601()).bind(2, s).bind(3, last_id).bind(4, reason);
      ins.step();
    }
    exec(db_, "COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return series.size();
}

std::optional<std::string> History::resolve_metric(const std::string& name_or_label) const {
  Statement st(db_, "SELECT name FROM metrics WHERE (name = ?1 OR label = ?1) AND text IS NULL "
                    "ORDER BY name = ?1 DESC LIMIT 1");
  st.bind(1, name_or_label);
  if (st.step()) return st.text(0);
  return std::nullopt;
}

std::vector<std::string> History::metric_names() const {
  Statement st(db_, "SELECT DISTINCT name FROM metrics WHERE text IS NULL ORDER BY name");
  std::vector<std::string> names;
  while (st.step()) names.push_back(st.text(0));
  return names;
}

std::vector<TrendPoint> History::trend(const std::string& metric, const std::string& series_glob) const {
  std::vector<TrendPoint> out;
  Statement st(db_,
               "SELECT r.id, r.recorded_utc, r.git_sha, r.series, m.value FROM runs r JOIN metrics m "
               "ON m.run_id = r.id WHERE m.name = ? AND m.text IS NULL ORDER BY r.id");
  st.bind(1, metric);
  std::map<std::string, std::int64_t> resets;
  while (st.step()) {
    TrendPoint p{st.integer(0), st.text(1), st.text(2), st.text(3), st.real(4), false};
    if (!glob_one(series_glob, p.series)) continue;
    if (!resets.count(p.series)) resets[p.series] = reset_point(p.series);
    p.before_reset = p.run_id <= resets[p.series];
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace encbench::reports

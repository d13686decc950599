#pragma once
// Arms of a live A/B (`encbench bench ab`): how to reach or start each server, and the process
// that runs one server for one round.
//
// Recipe syntax (docs/ab.md):
//   --arm NAME=http://host:port       a server already running (never started or stopped here)
//   --arm NAME=COMMAND                a shell command line (/bin/sh -c) that starts a server in the
//                                     foreground; placeholders {port} (a free port picked for
//                                     each round, or the --arm-port one), {round}, {arm} and
//                                     {round_dir} (this round's directory, e.g. for profiler traces)
//   --arm-env NAME:KEY=VALUE          environment variable of the arm's command (repeatable)
//   --arm-cwd NAME:DIR                working directory of the arm's command
//   --arm-port NAME:PORT              fixed port (checked free before each start) instead of a
//                                     picked one; needed when the command cannot take {port}
//
// A started server runs in its own session and process group (setsid), stdout and stderr into
// files of the round's directory; it is stopped by SIGTERM to the whole group, SIGKILL after the
// grace period, and only counts as stopped once no process of the group is left.
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace encbench::scenario {

// A server this process runs itself, started fresh for each round like a command arm and going
// through the same rounds, readiness, warm-ups and stop (`encbench run --clock real`: encbench
// serve in-process, because its guards read the engine's own counters, which /metrics lacks).
class InProcessServer {
 public:
  virtual ~InProcessServer() = default;
  virtual std::string base_url() const = 0;
  virtual int port() const = 0;
  virtual void measured_run_starts() = 0;  // around the measured run only (not the warm-ups)
  virtual void measured_run_ended() = 0;
  virtual void stop() = 0;
  // What the server says about the measured run: JSON merged into the round's record, and guard
  // failures ("where" names the arm and round) that make the run refuse a verdict.
  virtual nlohmann::json round_record() const = 0;
  virtual std::vector<std::string> round_guards(const std::string& where) const = 0;
};
using InProcessLauncher =
    std::function<std::unique_ptr<InProcessServer>(const std::string& arm, int round, const std::filesystem::path& round_dir)>;

struct ArmRecipe {
  std::string name;
  std::string url;      // set: a running server; command is empty
  std::string command;  // set: a shell command line with placeholders
  std::vector<std::pair<std::string, std::string>> env;
  std::filesystem::path cwd;
  int fixed_port = 0;   // --arm-port; 0 = pick a free port per round
  InProcessLauncher in_process;  // set: a server in this process (no command, no URL)
  bool started() const { return url.empty(); }
};

// "NAME=RECIPE" -> ArmRecipe; throws InvalidInput naming --arm.
ArmRecipe parse_arm(const std::string& spec);
// Applies "NAME:KEY=VALUE" (--arm-env), "NAME:DIR" (--arm-cwd) or "NAME:PORT" (--arm-port) to
// the arm called NAME; throws InvalidInput naming the flag when no arm has that name.
void apply_arm_env(std::vector<ArmRecipe>& arms, const std::string& spec);
void apply_arm_cwd(std::vector<ArmRecipe>& arms, const std::string& spec);
void apply_arm_port(std::vector<ArmRecipe>& arms, const std::string& spec);
// Every arm complete (names unique, commands with {port} or --arm-port, URLs http(s)://host:port).
void validate_arms(const std::vector<ArmRecipe>& arms);

// The command with {port}, {round}, {arm}, {round_dir} replaced.
std::string expand_recipe(const std::string& command, int port, int round, const std::string& arm,
                          const std::filesystem::path& round_dir);

// A TCP port nothing listens on now (bound to port 0 and released; the kernel does not hand the
// same port out again at once).
int pick_free_port();
// True when a listening socket holds `port` on any address (a bind with SO_REUSEADDR fails).
bool port_in_use(int port);
// "exited with status 3" / "killed by signal 9" from a waitpid status.
std::string describe_wait_status(int status);
// The last `max_lines` lines of a log file (for error messages); "" when unreadable.
std::string log_tail(const std::filesystem::path& file, std::size_t max_lines = 5);

struct StopReport {
  double stop_ms = 0;       // SIGTERM to the group gone
  bool killed = false;      // SIGKILL was needed after the grace period
  std::string exit;         // describe_wait_status of the leader ("" when it had been reaped before)
};

// One started server. The destructor stops it (a short grace) when stop() was not called, so an
// exception cannot leave a process behind.
class ServerProcess {
 public:
  struct Launch {
    std::string command;  // expanded
    std::vector<std::pair<std::string, std::string>> env;
    std::filesystem::path cwd;
    std::filesystem::path stdout_path, stderr_path;
  };
  explicit ServerProcess(const Launch& launch);  // forks and execs; throws std::runtime_error
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pgid() const { return pid_; }
  // The leader's wait status text once it has exited (reaps it); nullopt while it runs.
  std::optional<std::string> exited();
  StopReport stop(double grace_s);
  // True when a process of the group is still alive (kill(-pgid, 0)).
  bool group_alive() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  bool stopped_ = false;
  std::string exit_;
};

struct ReadyCheck {
  bool ready = false;
  bool interrupted = false;
  std::string endpoint;    // "/health" or "/v1/models"
  double waited_ms = 0;
  std::string failure;     // why not ready (timed out, process exited: ...)
};

// Polls GET base_url/health (200 = ready; any other answer falls back to GET /v1/models == 200)
// every 10 ms for 2 s, then every 100 ms, until ready, `timeout_s` passed, `stop_fd` became readable, or `died()` returns
// a reason (the started process exited).
ReadyCheck wait_until_ready(const std::string& base_url, double timeout_s, int stop_fd,
                            const std::function<std::optional<std::string>()>& died);

}  // namespace encbench::scenario

#include "harness/scenario/server_recipe.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "harness/client/bench.hpp"
#include "harness/core/error.hpp"

extern char** environ;

namespace encbench::scenario {
namespace {

using SteadyClock = std::chrono::steady_clock;

double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

ArmRecipe& arm_named(std::vector<ArmRecipe>& arms, const std::string& flag, const std::string& name) {
  for (auto& arm : arms)
    if (arm.name == name) return arm;
  std::string known;
  for (const auto& arm : arms) known += (known.empty() ? "" : ", ") + arm.name;
  throw InvalidInput(flag + ": no arm called '" + name + "' (arms: " + known + ")");
}

// "NAME:REST" -> (NAME, REST); the name may not contain ':'.
std::pair<std::string, std::string> split_arm_spec(const std::string& flag, const std::string& spec,
                                                   const char* what) {
  const auto colon = spec.find(':');
  require(colon != std::string::npos && colon > 0 && colon + 1 < spec.size(),
          flag + " expects NAME:" + what + ", got '" + spec + "'");
  return {spec.substr(0, colon), spec.substr(colon + 1)};
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
}

bool stop_fd_readable(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace

ArmRecipe parse_arm(const std::string& spec) {
  const auto eq = spec.find('=');
  require(eq != std::string::npos && eq > 0 && eq + 1 < spec.size(),
          "--arm expects NAME=RECIPE (a URL http://host:port or a command line with {port}), got '" + spec + "'");
  ArmRecipe arm;
  arm.name = spec.substr(0, eq);
  require(arm.name.find_first_of(":/ \t") == std::string::npos,
          "--arm: the name '" + arm.name + "' may not contain ':', '/' or spaces");
  const std::string recipe = spec.substr(eq + 1);
  if (recipe.rfind("http://", 0) == 0 || recipe.rfind("https://", 0) == 0) {
    arm.url = recipe;
    while (!arm.url.empty() && arm.url.back() == '/') arm.url.pop_back();
  } else {
    arm.command = recipe;
  }
  return arm;
}

void apply_arm_env(std::vector<ArmRecipe>& arms, const std::string& spec) {
  const auto [name, assignment] = split_arm_spec("--arm-env", spec, "KEY=VALUE");
  const auto eq = assignment.find('=');
  require(eq != std::string::npos && eq > 0, "--arm-env expects NAME:KEY=VALUE, got '" + spec + "'");
  arm_named(arms, "--arm-env", name).env.emplace_back(assignment.substr(0, eq), assignment.substr(eq + 1));
}

void apply_arm_cwd(std::vector<ArmRecipe>& arms, const std::string& spec) {
  const auto [name, dir] = split_arm_spec("--arm-cwd", spec, "DIR");
  std::error_code ec;
  require(std::filesystem::is_directory(dir, ec), "--arm-cwd " + name + ": '" + dir + "' is not a directory");
  arm_named(arms, "--arm-cwd", name).cwd = dir;
}

void apply_arm_port(std::vector<ArmRecipe>& arms, const std::string& spec) {
  const auto [name, text] = split_arm_spec("--arm-port", spec, "PORT");
  int port = 0;
  try {
    std::size_t used = 0;
    port = std::stoi(text, &used);
    require(used == text.size(), "");
  } catch (...) {
    port = 0;
  }
  require(port >= 1 && port <= 65535, "--arm-port " + name + ": port must be 1..65535, got '" + text + "'");
  arm_named(arms, "--arm-port", name).fixed_port = port;
}

void validate_arms(const std::vector<ArmRecipe>& arms) {
  require(arms.size() == 2, "bench ab needs exactly two --arm NAME=RECIPE (Before, then After), got " +
                                std::to_string(arms.size()));
  require(arms[0].name != arms[1].name, "--arm: the two arms need different names (both are '" + arms[0].name + "')");
  for (const auto& arm : arms) {
    if (!arm.started()) {
      require(arm.url.find("://") + 3 < arm.url.size(), "--arm " + arm.name + ": URL '" + arm.url + "' has no host");
      require(arm.env.empty() && arm.cwd.empty() && arm.fixed_port == 0,
              "--arm " + arm.name + " is a URL (a running server): --arm-env/--arm-cwd/--arm-port apply to commands only");
      continue;
    }
    if (arm.in_process) continue;  // picks its own port
    require(arm.command.find("{port}") != std::string::npos || arm.fixed_port != 0,
            "--arm " + arm.name + ": the command needs {port} (a free port per round) or --arm-port " + arm.name +
                ":PORT (the port it listens on)");
  }
}

std::string expand_recipe(const std::string& command, int port, int round, const std::string& arm,
                          const std::filesystem::path& round_dir) {
  std::string out = command;
  replace_all(out, "{port}", std::to_string(port));
  replace_all(out, "{round}", std::to_string(round));
  replace_all(out, "{arm}", arm);
  replace_all(out, "{round_dir}", round_dir.string());
  return out;
}

int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket(): ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("cannot pick a free port: ") + std::strerror(saved));
  return ntohs(addr.sin_port);
}

bool port_in_use(int port) {
  // SO_REUSEADDR: connections of a stopped server left in TIME_WAIT do not count (a new server
  // binds over them); a listening socket does.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  const bool taken = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == EADDRINUSE;
  ::close(fd);
  return taken;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + (strsignal(sig) ? strsignal(sig) : "?") + ")";
  }
  return "stopped (wait status " + std::to_string(status) + ")";
}

std::string log_tail(const std::filesystem::path& file, std::size_t max_lines) {
  std::ifstream in(file);
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 300) line = line.substr(0, 300) + "...";
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& line : lines) out += (out.empty() ? "" : " | ") + line;
  return out;
}

ServerProcess::ServerProcess(const Launch& launch) {
  // Everything the child needs is built before fork: between fork and exec only async-signal-safe
  // calls (this process has other threads).
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    bool overridden = false;
    for (const auto& [key, value] : launch.env) overridden = overridden || entry.rfind(key + "=", 0) == 0;
    if (!overridden) env_strings.push_back(entry);
  }
  for (const auto& [key, value] : launch.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string shell = "/bin/sh", dash_c = "-c", command = launch.command;
  char* argv[] = {shell.data(), dash_c.data(), command.data(), nullptr};
  const std::string out_path = launch.stdout_path.string(), err_path = launch.stderr_path.string();
  const std::string cwd = launch.cwd.string();
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) {
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    throw std::runtime_error("cannot create the server log files " + out_path + " / " + err_path);
  }
  // Processes the command leaves behind (the server under `sh -c`) become our children when
  // their parent exits, so they are reaped here at once: under a container's init, orphaned
  // zombies waited about a second to be reaped and counted as members of the group meanwhile.
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();  // own session and process group: stopped as a group, no terminal's Ctrl-C
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);  // the parent blocks SIGINT/SIGTERM for its signalfd
    ::signal(SIGPIPE, SIG_DFL);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out_fd, STDOUT_FILENO);
    ::dup2(err_fd, STDERR_FILENO);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      static const char msg[] = "encbench: cannot change to the arm's working directory\n";
      [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
      ::_exit(127);
    }
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  ::close(out_fd);
  ::close(err_fd);
  if (pid < 0) throw std::runtime_error(std::string("fork(): ") + std::strerror(errno));
  pid_ = pid;
}

ServerProcess::~ServerProcess() {
  if (!stopped_ && pid_ > 0) stop(2.0);
}

std::optional<std::string> ServerProcess::exited() {
  // Reaps every exited member of the group that is our child (the leader, and orphans handed to
  // us as subreaper); the leader's status is the one reported.
  int status = 0;
  for (pid_t r; (r = ::waitpid(-pid_, &status, WNOHANG)) > 0;)
    if (r == pid_) {
      reaped_ = true;
      exit_ = describe_wait_status(status);
    }
  if (reaped_) return exit_;
  return std::nullopt;
}

bool ServerProcess::group_alive() const {
  if (pid_ <= 0) return false;
  return ::kill(-pid_, 0) == 0 || errno == EPERM;
}

StopReport ServerProcess::stop(double grace_s) {
  StopReport report;
  if (stopped_) return report;
  stopped_ = true;
  const auto t0 = SteadyClock::now();
  ::kill(-pid_, SIGTERM);
  // The leader is reaped here (a zombie still counts as a member); other members are reaped by
  // init once they exit. Polled: a process group has no descriptor to wait on.
  auto gone = [&] {
    exited();
    return reaped_ && !group_alive();
  };
  while (!gone() && ms_since(t0) < grace_s * 1e3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!gone()) {
    report.killed = true;
    ::kill(-pid_, SIGKILL);
    while (!gone() && ms_since(t0) < grace_s * 1e3 + 10'000) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  report.stop_ms = ms_since(t0);
  report.exit = exit_;
  return report;
}

ReadyCheck wait_until_ready(const std::string& base_url, double timeout_s, int stop_fd,
                            const std::function<std::optional<std::string>()>& died) {
  ReadyCheck check;
  const auto t0 = SteadyClock::now();
  for (;;) {
    if (stop_fd_readable(stop_fd)) {
      check.interrupted = true;
      check.failure = "interrupted";
      break;
    }
    if (auto why = died ? died() : std::nullopt) {
      check.failure = "the server process " + *why + " before it became ready";
      break;
    }
    const double left_s = timeout_s - ms_since(t0) / 1e3;
    if (left_s <= 0) {
      check.failure = "not ready within --ready-timeout " + std::to_string(static_cast<int>(timeout_s)) +
                      " s (GET /health and /v1/models did not answer 200)";
      break;
    }
    const double per_try_s = std::min(2.0, std::max(0.1, left_s));
    const auto [health, ignored] = client::get_url(base_url + "/health", per_try_s);
    if (health == 200) {
      check.ready = true;
      check.endpoint = "/health";
      break;
    }
    // A server without /health (it answered something else): its model list says it is up.
    if (health != 0 && client::get_url(base_url + "/v1/models", per_try_s).first == 200) {
      check.ready = true;
      check.endpoint = "/v1/models";
      break;
    }
    // Often at first, so a quick server's start-up is not rounded up by the poll period.
    std::this_thread::sleep_for(std::chrono::milliseconds(ms_since(t0) < 2000 ? 10 : 100));
  }
  check.waited_ms = ms_since(t0);
  return check;
}

}  // namespace encbench::scenario

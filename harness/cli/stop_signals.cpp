// The one SIGINT/SIGTERM set-up of the commands that stop cleanly (command.hpp).
#include <sys/signalfd.h>

#include "harness/cli/command.hpp"

namespace encbench::cli {

sigset_t block_stop_signals() {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  return mask;
}

int stop_signal_fd() {
  const sigset_t mask = block_stop_signals();
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

}  // namespace encbench::cli

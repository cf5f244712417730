#include "runtime/fatal_restore.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstring>

extern char** environ;

namespace fw {
namespace {

// Owned by the handler from install() on; never freed (the process is ending when it is used).
char** g_argv = nullptr;
volatile sig_atomic_t g_installed = 0;

extern "C" void fw_on_fatal_signal(int sig) {
  if (g_installed && g_argv != nullptr) {
    // vfork: no atfork handlers, no copy of a heap that may be corrupt; the child only execs.
    const pid_t child = ::vfork();
    if (child == 0) {
      ::execve("/proc/self/exe", g_argv, environ);
      ::_exit(127);
    }
  }
  // SA_RESETHAND put the default action back: raising again ends the process as the signal
  // would have (a fault returns to the faulting instruction and dies there).
  ::raise(sig);
}

}  // namespace

const std::vector<int>& FatalRestore::signals() {
  static const std::vector<int> kSignals = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  return kSignals;
}

void FatalRestore::install(const std::vector<std::string>& argv) {
  char** a = new char*[argv.size() + 1];
  for (size_t i = 0; i < argv.size(); ++i) a[i] = ::strdup(argv[i].c_str());
  a[argv.size()] = nullptr;
  g_argv = a;
  struct sigaction sa {};
  sa.sa_handler = fw_on_fatal_signal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int s : signals()) ::sigaction(s, &sa, nullptr);
  g_installed = 1;
}

void FatalRestore::uninstall() {
  g_installed = 0;
  for (int s : signals()) ::signal(s, SIG_DFL);
}

}  // namespace fw

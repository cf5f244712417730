#include "runtime/stop_signals.hpp"

#include <atomic>

namespace fw {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "the handler must not take a lock");

extern "C" void fw_on_stop_signal(int sig) {
  g_signal.store(sig);
  g_stop.store(true);
}

bool is_ours(const struct sigaction& a) {
  return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == fw_on_stop_signal;
}

}  // namespace

const std::vector<int>& StopSignals::signals() {
  // Every signal whose default action ends the process (signal(7)), less SIGKILL/SIGSTOP, the
  // fault signals (FatalRestore's) and SIGPIPE (ignored).
  static const std::vector<int> kSignals = [] {
    std::vector<int> s = {SIGINT,    SIGTERM, SIGHUP,  SIGUSR1, SIGUSR2, SIGQUIT, SIGTRAP, SIGALRM,
                          SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGSYS,  SIGIO,   SIGPWR};
#ifdef SIGSTKFLT
    s.push_back(SIGSTKFLT);
#endif
    for (int rt = SIGRTMIN; rt <= SIGRTMAX; ++rt) s.push_back(rt);  // the program's, not NPTL's
    return s;
  }();
  return kSignals;
}

StopSignals::StopSignals() {
  g_stop.store(false);
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = fw_on_stop_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const std::vector<int>& sigs = signals();
  old_.resize(sigs.size());
  for (size_t i = 0; i < sigs.size(); ++i) ::sigaction(sigs[i], &sa, &old_[i]);
  ::signal(SIGPIPE, SIG_IGN);
}

StopSignals::~StopSignals() {
  const std::vector<int>& sigs = signals();
  for (size_t i = 0; i < sigs.size(); ++i) {
    struct sigaction now {};
    if (::sigaction(sigs[i], nullptr, &now) == 0 && is_ours(now)) {
      ::sigaction(sigs[i], &old_[i], nullptr);
    }
  }
  // SIGPIPE stays ignored: a server built meanwhile (httplib's sets it too) relies on that.
}

bool StopSignals::requested() { return g_stop.load(); }
int StopSignals::signal_number() { return g_signal.load(); }
void StopSignals::request() { g_stop.store(true); }

}  // namespace fw

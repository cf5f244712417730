#pragma once
// StopSignals: while an object lives, every signal that would otherwise end the process and can
// be caught sets a process-wide stop flag instead, so the caller ends its loop and runs its
// normal exit path (for the agent: restore the caps, remove the restore file, exit 0). Those
// are SIGINT, SIGTERM, SIGHUP (the terminal closed), SIGUSR1, SIGUSR2, SIGQUIT, SIGTRAP,
// SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGSYS, SIGSTKFLT, SIGIO, SIGPWR and the
// real-time signals SIGRTMIN..SIGRTMAX (signals()): SIGQUIT, SIGTRAP, SIGXCPU, SIGXFSZ and
// SIGSYS would also have dumped core; here they are clean stops too. SIGPIPE is ignored
// instead (a write to a closed pipe or socket fails with EPIPE, which its caller handles; it
// is no reason to stop). A disposition found ignored (nohup, a shell's background job) is taken
// over as well: the signal stops the loop.
//
// Not stop signals: SIGKILL and SIGSTOP (they cannot be caught), and the fault signals SIGSEGV,
// SIGBUS, SIGFPE, SIGILL and SIGABRT. After one of those the process state (heap, locks, the
// NVML library) cannot be trusted to run the normal exit path, so the agent's exit does not
// rely on it: runtime/fatal_restore.hpp's handler vfork+execs `flexwatt agent ... --restore`,
// which puts the caps back from the restore file once the dying process released the node
// lock, and under systemd the unit's ExecStopPost= runs the same --restore after any exit.
// Signals whose default action is to do nothing or to stop the process are left alone.
//
// The previous dispositions are put back on destruction, for each signal whose handler is
// still this one (a handler someone installed meanwhile stays); SIGPIPE stays ignored (an
// httplib server, built meanwhile, ignores it too and relies on that). At most one object at a time
// (REQUIRES). The flag is cleared at construction. The handler is async-signal-safe.

#include <signal.h>

#include <vector>

namespace fw {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once a stop signal arrived (or request() was called). Async-signal-safe.
  static bool requested();
  // The signal that asked for the stop (the latest; 0: none, or request()).
  static int signal_number();
  // Sets the flag as a signal would (tests, or a stop from another thread).
  static void request();

  // The signals that stop the loop, in the order they are installed (SIGPIPE is not one).
  static const std::vector<int>& signals();

 private:
  std::vector<struct sigaction> old_;  // per signals() entry
};

}  // namespace fw

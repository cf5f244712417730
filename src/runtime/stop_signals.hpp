#pragma once
// StopSignals: while an object lives, SIGINT, SIGTERM, SIGHUP (the terminal closed), SIGUSR1 and
// SIGUSR2 set a process-wide stop flag instead of killing the process, so the caller ends its
// loop and runs its normal exit path (for the agent: restore the caps). The previous handlers
// are put back on destruction. At most one object at a time (REQUIRES). The flag is cleared at
// construction. Fatal signals (SIGABRT, SIGSEGV, ...) are runtime/fatal_restore.hpp's.

#include <csignal>

namespace fw {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once a stop signal arrived (or request() was called). Async-signal-safe.
  static bool requested();
  // The signal that asked for the stop (0: none, or request()).
  static int signal_number();
  // Sets the flag as a signal would (tests, or a stop from another thread).
  static void request();

  // The signals that stop the loop, in the order they are installed.
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

 private:
  using Handler = void (*)(int);
  Handler old_[sizeof kSignals / sizeof kSignals[0]];
};

}  // namespace fw

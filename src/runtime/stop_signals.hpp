#pragma once
// StopSignals: while an object lives, SIGINT and SIGTERM set a process-wide stop flag instead of
// killing the process; the previous handlers are put back on destruction. At most one object
// at a time (REQUIRES). The flag is cleared at construction.

#include <csignal>

namespace fw {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGINT or SIGTERM arrived (or request() was called). Async-signal-safe.
  static bool requested();
  // Sets the flag as a signal would (tests, or a stop from another thread).
  static void request();

 private:
  using Handler = void (*)(int);
  Handler old_int_;
  Handler old_term_;
};

}  // namespace fw

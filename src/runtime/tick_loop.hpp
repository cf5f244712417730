#pragma once
// TickLoop: the wall-clock loop of `flexwatt sample` and the node agent. It waits for each
// deadline of a drift-free TickSchedule (tick k due at k·interval_s after the loop's start),
// hands the tick to the caller, and counts lateness and missed ticks.
//
// Use:
//   TickLoop loop(clock, interval_s, num_ticks, &StopSignals::requested);
//   while (loop.wait_next()) {       // false when all ticks are done or a stop was requested
//     work(loop.tick_now_s());       // the clock when the tick started
//     loop.complete();               // a late finish skips (and counts) deadlines passed
//   }
// Waiting sleeps in slices of at most max_sleep_slice_s so a stop request is seen promptly.
// The loop reads time only through `clock` (tests inject a fake and never sleep). Lateness of
// a tick = tick_now_s - its deadline. Not thread-safe.

#include <cstdint>
#include <functional>

#include "runtime/clock.hpp"
#include "runtime/tick_schedule.hpp"

namespace fw {

class TickLoop {
 public:
  // The schedule starts at clock.now_s(). REQUIRES: interval_s > 0; `clock` outlives the loop.
  // stop_requested may be empty (never stops early).
  TickLoop(Clock& clock, double interval_s, int64_t num_ticks,
           std::function<bool()> stop_requested = {}, double max_sleep_slice_s = 0.2);

  // Sleeps until the next deadline; true with a tick to take, false when done or stopped.
  bool wait_next();
  // Marks the current tick taken (reads the clock). REQUIRES: the last wait_next() was true.
  void complete();

  double tick_now_s() const { return tick_now_s_; }  // relative to the loop's start
  double deadline_s() const { return sched_.deadline_s(); }
  bool stopped() const { return stopped_; }  // wait_next() returned false on a stop request
  int64_t planned() const { return sched_.num_ticks(); }
  int64_t taken() const { return sched_.taken(); }
  int64_t missed() const { return sched_.missed(); }
  double max_lateness_s() const { return max_late_s_; }
  // Seconds since the loop's start, now.
  double elapsed_s() { return clock_.now_s() - start_s_; }

 private:
  bool stop() const { return stop_requested_ && stop_requested_(); }

  Clock& clock_;
  double start_s_;
  TickSchedule sched_;
  std::function<bool()> stop_requested_;
  double slice_s_;
  double tick_now_s_ = 0;
  double max_late_s_ = 0;
  bool stopped_ = false;
};

}  // namespace fw

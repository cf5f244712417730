#pragma once
// RealTimeDriver: runs a control loop's ticks on the wall clock — the node agent's loop
// (`eval` steps the same ControlLoop without a clock). Tick k of the plant is due at
// k·period_s after run() starts, on a drift-free schedule (runtime/tick_loop.hpp), in plant
// seconds: with time_scale s the plant's clock runs s times the wall's (a stop is still seen
// within 50 ms of wall time).
//
// Each tick: on_tick(stats) with stats.plant_time_s = k·period_s and stats.lateness_s = how
// long after that deadline the tick started (>= 0); a tick later than a quarter period counts
// in late_ticks. A deadline that passed while a tick ran is, per `missed`:
//   kSkip     not taken: on_skip() (the caller advances its plant tick; hardware's time is the
//             wall's, so the reading would be stale anyway);
//   kCatchUp  taken late (on_tick, counted in caught_up): the plant keeps its own time, so a
//             loaded machine changes the timing, never the episode.
// Every deadline missed counts in `missed` either way. With watchdog_s > 0, WATCHDOG=1 goes to
// systemd (sd_notify) at least that often (wall seconds) while ticks are taken.
// Stops when num_ticks ticks (taken or skipped) are done or stop_requested() is true (checked
// at least every 50 ms of wall time, between ticks); never interrupts a tick. Reads time only
// through `clock` (tests inject a fake that never sleeps). Not thread-safe: one run at a time,
// the callbacks on the calling thread.

#include <cstdint>
#include <functional>

#include "runtime/clock.hpp"
#include "runtime/node_plant.hpp"

namespace fw {

struct RealTimeOptions {
  double period_s = 1;                // plant seconds between ticks; > 0
  int64_t num_ticks = INT64_MAX / 2;  // planned ticks (taken + skipped)
  double time_scale = 1;              // plant seconds per wall second; > 0
  MissedDeadlines missed = MissedDeadlines::kSkip;
  double watchdog_s = 0;  // WATCHDOG=1 interval, wall seconds; 0: none
};

struct RealTimeStats {
  int64_t ticks = 0;        // ticks taken (caught-up ones included)
  int64_t late_ticks = 0;   // ticks taken more than a quarter period after their deadline
  int64_t missed = 0;       // deadlines missed (kSkip: skipped; kCatchUp: caught up)
  int64_t caught_up = 0;    // kCatchUp: missed deadlines whose ticks were taken late
  double plant_time_s = 0;  // the tick's plant time, k·period_s
  double lateness_s = 0;    // of the tick being taken
  double lateness_max_s = 0;
};

class RealTimeDriver {
 public:
  explicit RealTimeDriver(RealTimeOptions opt) : opt_(opt) {}

  // REQUIRES: period_s > 0, time_scale > 0. on_skip may be empty.
  RealTimeStats run(Clock& clock, const std::function<bool()>& stop_requested,
                    const std::function<void(const RealTimeStats&)>& on_tick,
                    const std::function<void()>& on_skip);

 private:
  RealTimeOptions opt_;
};

}  // namespace fw

#pragma once
// TickSchedule: a drift-free sampling schedule on absolute deadlines.
//
// Tick k is due at start_s + k * interval_s (computed by multiplication, never by adding
// intervals, so lateness and rounding never accumulate). The caller waits until deadline_s(),
// samples, then calls complete(now_s) with the time after sampling: every later deadline that
// is already strictly in the past is skipped and counted as missed, and the schedule moves to
// the next deadline still ahead. Times are seconds on any monotonic clock; the schedule never
// reads a clock itself, so tests drive it with fake times. Not thread-safe.

#include <cstdint>

namespace fw {

class TickSchedule {
 public:
  // REQUIRES: interval_s > 0, num_ticks >= 0.
  TickSchedule(double start_s, double interval_s, int64_t num_ticks);

  // Number of ticks in [0, duration_s) on a grid of interval_s: floor(duration/interval), with
  // a tolerance of 1e-9 intervals so that 1.0 / 0.1 gives 10, not 9.
  static int64_t ticks_in(double duration_s, double interval_s);

  bool done() const { return next_ >= num_ticks_; }
  // Index of the tick to take next.
  int64_t tick() const { return next_; }
  // Due time of tick(). Meaningful while !done().
  double deadline_s() const { return deadline_of(next_); }
  double deadline_of(int64_t k) const { return start_s_ + static_cast<double>(k) * interval_s_; }

  // Marks tick() as taken and skips (counting as missed) every later tick whose deadline is
  // strictly before now_s. REQUIRES: !done().
  void complete(double now_s);

  int64_t taken() const { return taken_; }
  int64_t missed() const { return missed_; }
  int64_t num_ticks() const { return num_ticks_; }
  double interval_s() const { return interval_s_; }

 private:
  double start_s_;
  double interval_s_;
  int64_t num_ticks_;
  int64_t next_ = 0;
  int64_t taken_ = 0;
  int64_t missed_ = 0;
};

}  // namespace fw

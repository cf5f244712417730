#include "runtime/tick_loop.hpp"

#include <algorithm>

namespace fw {

TickLoop::TickLoop(Clock& clock, double interval_s, int64_t num_ticks,
                   std::function<bool()> stop_requested, double max_sleep_slice_s)
    : clock_(clock),
      start_s_(clock.now_s()),
      sched_(0.0, interval_s, num_ticks),
      stop_requested_(std::move(stop_requested)),
      slice_s_(max_sleep_slice_s) {}

bool TickLoop::wait_next() {
  if (sched_.done()) return false;
  if (stop()) {
    stopped_ = true;
    return false;
  }
  const double deadline = start_s_ + sched_.deadline_s();
  for (double now = clock_.now_s(); now < deadline && !stop(); now = clock_.now_s()) {
    clock_.sleep_until_s(std::min(deadline, now + slice_s_));
  }
  if (stop()) {
    stopped_ = true;
    return false;
  }
  tick_now_s_ = elapsed_s();
  max_late_s_ = std::max(max_late_s_, tick_now_s_ - sched_.deadline_s());
  return true;
}

void TickLoop::complete() { sched_.complete(elapsed_s()); }

}  // namespace fw

#include "runtime/tick_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

TickSchedule::TickSchedule(double start_s, double interval_s, int64_t num_ticks)
    : start_s_(start_s), interval_s_(interval_s), num_ticks_(std::max<int64_t>(0, num_ticks)) {}

int64_t TickSchedule::ticks_in(double duration_s, double interval_s) {
  if (!(interval_s > 0) || !(duration_s > 0)) return 0;
  return static_cast<int64_t>(std::floor(duration_s / interval_s + 1e-9));
}

void TickSchedule::complete(double now_s) {
  ++taken_;
  ++next_;
  if (next_ >= num_ticks_ || !(deadline_of(next_) < now_s)) return;
  // First tick whose deadline is not before now_s; the ones in between are missed.
  auto first_ahead = static_cast<int64_t>(std::ceil((now_s - start_s_) / interval_s_));
  while (first_ahead > next_ && !(deadline_of(first_ahead - 1) < now_s)) --first_ahead;
  while (deadline_of(first_ahead) < now_s) ++first_ahead;  // rounding guard
  first_ahead = std::min(first_ahead, num_ticks_);
  missed_ += first_ahead - next_;
  next_ = first_ahead;
}

}  // namespace fw

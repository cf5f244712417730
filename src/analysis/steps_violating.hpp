#pragma once
// "Steps violating": the share of a job's steps during which a trailing-window budget was
// broken. flexwatt's definition (stated, since the published 216-of-500 figure does not give
// one): a step violates when the trailing window mean (the mean of the samples in
// (t − window_s, t]) exceeds the budget (strictly) at any sample inside the step. A sample is
// inside the step that is in progress at its time (floor of the job's steps_total counter).
// Trailing means are judged only once a full window of samples lies behind t (no partial
// windows at the start). Only completed steps count: the step still in progress at the last
// sample is left out.
//
// Samples are (time_s, power_w, steps_total), time increasing; power is the budget unit's
// power (one GPU for a per-GPU budget). Streaming, O(window) memory.

#include <cstdint>
#include <deque>
#include <utility>

namespace fw {

struct StepViolationStats {
  int64_t steps = 0;      // completed steps seen
  int64_t violating = 0;  // of which violating
  double share() const {
    return steps > 0 ? static_cast<double>(violating) / static_cast<double>(steps) : 0.0;
  }
};

class StepViolationCounter {
 public:
  // REQUIRES: window_s > 0.
  StepViolationCounter(double budget_w, double window_s);
  void add(double time_s, double power_w, double steps_total);
  StepViolationStats stats() const { return stats_; }

 private:
  double budget_w_, window_s_;
  std::deque<std::pair<double, double>> window_;  // (time, power) in (t − W, t]
  double sum_w_ = 0;
  double first_time_s_ = 0;
  bool started_ = false;
  int64_t step_ = -1;  // step in progress
  bool step_violated_ = false;
  StepViolationStats stats_;
};

}  // namespace fw

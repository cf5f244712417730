#include "analysis/steps_violating.hpp"

#include <cmath>

namespace fw {

StepViolationCounter::StepViolationCounter(double budget_w, double window_s)
    : budget_w_(budget_w), window_s_(window_s) {}

void StepViolationCounter::add(double time_s, double power_w, double steps_total) {
  const auto step = static_cast<int64_t>(std::floor(steps_total + 1e-9));
  if (!started_) {
    started_ = true;
    first_time_s_ = time_s;
    step_ = step;
  }
  if (step != step_) {  // the step in progress completed
    ++stats_.steps;
    if (step_violated_) ++stats_.violating;
    step_ = step;
    step_violated_ = false;
  }
  window_.emplace_back(time_s, power_w);
  sum_w_ += power_w;
  const double eps = 1e-9 * window_s_;
  while (!window_.empty() && window_.front().first <= time_s - window_s_ + eps) {
    sum_w_ -= window_.front().second;
    window_.pop_front();
  }
  // Full window: the first sample lies at least one window before.
  if (time_s - first_time_s_ + eps >= window_s_ && !window_.empty()) {
    const double mean = sum_w_ / static_cast<double>(window_.size());
    if (mean > budget_w_) step_violated_ = true;
  }
}

}  // namespace fw

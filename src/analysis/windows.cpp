#include "analysis/windows.hpp"

#include <algorithm>
#include <cmath>

namespace fw {

WindowAccumulator::WindowAccumulator(double window_s, double budget_w)
    : window_s_(window_s), budget_w_(budget_w), eps_s_(1e-9 * window_s) {
  stats_.window_s = window_s;
}

void WindowAccumulator::open_window_at(double time_s) {
  // The window holding time_s, never one before the current one: k = floor(x) with
  // x = (time_s - t0 + eps) / W, at least index_ + 1 once started. When time_s lies well
  // before the end of window index_ + 1 (the numerator below (index_ + 2)·W by a relative
  // 1e-12, far beyond the division's rounding), floor(x) <= index_ + 1, so k = index_ + 1
  // without the division.
  const double a = time_s - t0_s_ + eps_s_;
  int64_t k;
  if (started_ && a < static_cast<double>(index_ + 2) * window_s_ * (1 - 1e-12)) {
    k = index_ + 1;
  } else {
    const double x = a / window_s_;
    k = static_cast<int64_t>(std::floor(x));
    if (started_) k = std::max(k, index_ + 1);
  }
  index_ = k;
  start_s_ = t0_s_ + static_cast<double>(k) * window_s_;
  end_s_ = t0_s_ + static_cast<double>(k + 1) * window_s_;
  sum_wj_ = 0;
  covered_s_ = 0;
}

void WindowAccumulator::close_window() {
  if (covered_s_ >= 0.5 * window_s_) {
    const double mean = sum_wj_ / covered_s_;
    ++stats_.windows;
    if (mean > budget_w_ * (1 + kViolationRelTol)) {
      ++stats_.violations;
      stats_.energy_over_budget_j += (mean - budget_w_) * covered_s_;
    }
    if (stats_.windows == 1 || mean > stats_.peak_mean_w) stats_.peak_mean_w = mean;
    if (keep_means_) means_.push_back(mean);
  } else if (covered_s_ > 0) {
    ++stats_.skipped;
  }
  sum_wj_ = 0;
  covered_s_ = 0;
}

void WindowAccumulator::add_slow(double time_s, double power_w, double dt_s) {
  if (!started_) {
    t0_s_ = time_s;
    open_window_at(time_s);
    started_ = true;
  }
  for (;;) {
    if (time_s >= end_s_ - eps_s_) {
      // Windows jumped over entirely (a gap) cover nothing: skipped silently is wrong, so
      // count them as skipped (they had no samples at all).
      close_window();
      const int64_t before = index_;
      open_window_at(time_s);
      stats_.skipped += std::max<int64_t>(0, index_ - before - 1);
    }
    const double room = end_s_ - time_s;
    if (dt_s <= room + eps_s_) {
      sum_wj_ += power_w * dt_s;
      covered_s_ += dt_s;
      return;
    }
    sum_wj_ += power_w * room;
    covered_s_ += room;
    time_s = end_s_;
    dt_s -= room;
  }
}

WindowStats WindowAccumulator::finish() const {
  // Closes a copy of the open window only (the kept means are not copied).
  WindowStats s = stats_;
  if (started_) {
    if (covered_s_ >= 0.5 * window_s_) {
      const double mean = sum_wj_ / covered_s_;
      ++s.windows;
      if (mean > budget_w_ * (1 + kViolationRelTol)) {
        ++s.violations;
        s.energy_over_budget_j += (mean - budget_w_) * covered_s_;
      }
      if (s.windows == 1 || mean > s.peak_mean_w) s.peak_mean_w = mean;
    } else if (covered_s_ > 0) {
      ++s.skipped;
    }
  }
  s.violation_rate =
      s.windows > 0 ? static_cast<double>(s.violations) / static_cast<double>(s.windows) : 0.0;
  return s;
}

std::vector<double> WindowAccumulator::means() const {
  std::vector<double> out = means_;
  if (keep_means_ && started_ && covered_s_ >= 0.5 * window_s_) out.push_back(sum_wj_ / covered_s_);
  return out;
}

std::vector<WindowStats> analyze_windows(const std::vector<double>& power_w, double dt_s,
                                         double budget_w, const std::vector<double>& windows_s) {
  std::vector<WindowStats> out;
  for (double w : windows_s) {
    WindowAccumulator acc(w, budget_w);
    for (size_t i = 0; i < power_w.size(); ++i) {
      acc.add(static_cast<double>(i) * dt_s, power_w[i], dt_s);
    }
    out.push_back(acc.finish());
  }
  return out;
}

}  // namespace fw

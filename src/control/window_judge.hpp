#pragma once
// WindowJudge: the budget-window rule of a fixed-period sample series, one per budget unit.
// The one judge behind EpisodeMetrics' sliding violation rate, the PPO environment's window
// penalty and the oracle's feasibility (its tumbling windows at arbitrary lengths, for `eval`
// tables and `analyze`, are analysis/windows.hpp's time-weighted accumulator, which agrees
// with this one on whole-sample windows: tests/control/window_judge_test.cpp).
//
// Input: per sample, every unit's power divided by the budget in force (1.0 = at budget).
// A window holds n samples (samples_per_window(): the budget's window_s over the sample
// period, rounded, at least 1). Rules:
//   kTumbling: consecutive windows of n samples; the first one began `unseen` samples before
//     the first sample fed after reset() (feed a partly seen window's samples first, and
//     name the samples of it that were never seen, to align it). A window is judged at its
//     n-th sample: mean = the sum of the ratios fed in it, in the order fed, / their count
//     (n unless samples were unseen). The open window is judged by open_mean() once it was
//     fed at least half of n samples (2·k >= n), as analysis/windows.hpp judges a trailing
//     partial window.
//   kSliding: the trailing n samples, judged at every sample once n have been fed:
//     mean = a running sum (newest added, oldest dropped) / n. Tumbling windows can be gamed
//     by timing heavy phases across their boundaries; this cannot.
// Per sample: set() every unit, then advance(); when advance() returns true, mean(u) is unit
// u's judged mean at this sample. Allocates only in reset(). Not thread-safe.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace fw {

class WindowJudge {
 public:
  enum class Rule { kTumbling, kSliding };

  // Samples per window of window_s at sample_period_s (> 0): max(1, round(window_s / period)).
  static size_t samples_per_window(double window_s, double sample_period_s) {
    return static_cast<size_t>(std::max(1LL, std::llround(window_s / sample_period_s)));
  }

  // REQUIRES: n >= 1; unseen < n (kTumbling only).
  void reset(Rule rule, size_t units, size_t n, size_t unseen = 0) {
    rule_ = rule;
    units_ = units;
    n_ = n;
    pos_ = fed_ = 0;
    filled_ = rule == Rule::kTumbling ? unseen : 0;
    ring_.assign(rule == Rule::kSliding ? units * n : 0, 0.0);
    sum_.assign(units, 0.0);
    mean_.assign(units, 0.0);
  }
  // Unit u's ratio for the current sample.
  void set(size_t u, double ratio) {
    if (rule_ == Rule::kTumbling) {
      sum_[u] += ratio;
      return;
    }
    double& slot = ring_[pos_ * units_ + u];
    sum_[u] += ratio - slot;
    slot = ratio;
  }
  // Ends the current sample; true when every unit's mean() is judged at it.
  bool advance() {
    if (rule_ == Rule::kSliding) {
      pos_ = (pos_ + 1) % n_;
      if (filled_ < n_) ++filled_;
      if (filled_ < n_) return false;
      for (size_t u = 0; u < units_; ++u) mean_[u] = sum_[u] / static_cast<double>(n_);
      return true;
    }
    ++fed_;
    if (++filled_ < n_) return false;
    for (size_t u = 0; u < units_; ++u) {
      mean_[u] = sum_[u] / static_cast<double>(fed_);
      sum_[u] = 0;
    }
    filled_ = fed_ = 0;
    return true;
  }
  // Unit u's mean at the last sample advance() judged.
  double mean(size_t u) const { return mean_[u]; }

  // kTumbling: samples fed to the open window (0 right after a window closed).
  size_t open_samples() const { return rule_ == Rule::kTumbling ? fed_ : 0; }
  // kTumbling: whether the open window was fed enough samples (at least half of n) to judge.
  bool open_judged() const { return open_samples() > 0 && 2 * open_samples() >= n_; }
  // kTumbling: unit u's mean over the open window. REQUIRES: open_samples() > 0.
  double open_mean(size_t u) const { return sum_[u] / static_cast<double>(fed_); }

  Rule rule() const { return rule_; }
  size_t units() const { return units_; }
  size_t window() const { return n_; }  // samples per window; 0 before reset()

 private:
  Rule rule_ = Rule::kTumbling;
  size_t units_ = 0, n_ = 0, pos_ = 0, filled_ = 0, fed_ = 0;  // filled_: window position
  std::vector<double> ring_;                                   // kSliding: [sample][unit]
  std::vector<double> sum_;   // per unit: open window's sum (tumbling) or trailing sum
  std::vector<double> mean_;  // per unit: the last judged mean
};

}  // namespace fw

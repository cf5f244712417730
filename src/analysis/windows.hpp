#pragma once
// Windowed budget analysis of a power series, streaming (constant memory), so it serves
// both `analyze` on 10-million-row traces and `eval` inside the control loop.
//
// Windows are tumbling, aligned to the first sample's time: window k covers
// [t0 + k·W, t0 + (k+1)·W). A sample holds its value over [time_s, time_s + dt_s) (zero-order
// hold); a sample that straddles a window boundary is split between the windows. A window's
// mean power is the time-weighted mean over the time its samples cover (covered_s), so a gap
// (time no sample covers) neither raises nor lowers it.
// A window is judged only when its samples cover at least half of W (this applies to the
// trailing partial window and to windows that straddle gaps alike); others are counted in
// `skipped`. A judged window violates the budget when its mean exceeds budget_w by more than
// kViolationRelTol relative: mean > budget_w·(1 + 1e-9). The rounding error of the sums
// (~1e-15 relative) is far below that tolerance, so the verdict does not depend on summation
// order (or chunking) except for a mean within ~1e-15 of budget_w·(1 + 1e-9); a mean exactly at
// the budget never violates.
// Energy above budget is reported per window length as Σ max(0, window_mean − budget)·covered_s
// over judged windows (so it shrinks as windows grow and smoothing hides short peaks).
//
// Cost: add() is O(1) (plus one step per window boundary crossed), allocation-free.
// Slivers shorter than 1e-9·W at a window boundary (floating-point residue of sample times
// such as 0.1·k) are kept in the earlier window. Not thread-safe.

#include <cstdint>
#include <vector>

namespace fw {

// Relative tolerance of the violation test (see above).
inline constexpr double kViolationRelTol = 1e-9;

struct WindowStats {
  double window_s = 0;
  int64_t windows = 0;              // windows judged
  int64_t violations = 0;           // windows whose mean exceeded the budget (tolerance above)
  int64_t skipped = 0;              // windows with samples covering less than half of W
  double violation_rate = 0;        // violations / windows (0 when no windows)
  double peak_mean_w = 0;           // largest judged window mean (0 when no windows)
  double energy_over_budget_j = 0;  // Σ max(0, mean − budget) · covered_s, judged windows
};

class WindowAccumulator {
 public:
  // REQUIRES: window_s > 0, budget_w > 0 (+infinity: track means only, never violate).
  WindowAccumulator(double window_s, double budget_w);
  // Adds one sample held for dt_s ≥ 0 seconds starting at time_s. Times must not decrease
  // (time_s ≥ the previous time_s + dt_s, up to rounding).
  void add(double time_s, double power_w, double dt_s) {
    const double end_s = time_s + dt_s;
    if (started_ && time_s >= start_s_ - eps_s_ && end_s <= end_s_ + eps_s_) {
      sum_wj_ += power_w * dt_s;  // fast path: inside the open window
      covered_s_ += dt_s;
      return;
    }
    add_slow(time_s, power_w, dt_s);
  }
  // add() takes its fast path (the sample lies inside the open window) exactly when
  // started(), time_s >= fast_from_s() and time_s + dt_s <= fast_to_s(); then it does what
  // add_inside(power_w * dt_s, dt_s) does. For callers feeding many windows the same sample.
  bool started() const { return started_; }
  double fast_from_s() const { return start_s_ - eps_s_; }
  double fast_to_s() const { return end_s_ + eps_s_; }
  void add_inside(double energy_j, double dt_s) {
    sum_wj_ += energy_j;
    covered_s_ += dt_s;
  }
  // Stats including the open window (which is judged by the same half-coverage rule).
  WindowStats finish() const;
  // Off by default. When on, the mean of every judged window is kept (one double a window;
  // add() may then allocate at window boundaries), for quantiles (oversubscription.hpp).
  void keep_means(bool on) { keep_means_ = on; }
  // Means of the judged windows in time order, the open window included when judged.
  // Empty unless keep_means(true) was set before the first add().
  std::vector<double> means() const;
  double window_s() const { return window_s_; }
  double budget_w() const { return budget_w_; }

 private:
  void add_slow(double time_s, double power_w, double dt_s);
  void close_window();
  void open_window_at(double time_s);
  double window_s_, budget_w_, eps_s_;
  double t0_s_ = 0;     // start of window 0
  int64_t index_ = 0;   // index of the open window
  double start_s_ = 0;  // start of the open window
  double end_s_ = 0;    // end of the open window
  bool started_ = false;
  double sum_wj_ = 0;     // Σ p·dt in the open window
  double covered_s_ = 0;  // Σ dt in the open window
  WindowStats stats_;
  bool keep_means_ = false;
  std::vector<double> means_;  // judged window means, when keep_means_
};

// Convenience: stats for several window lengths over one series, sample i held over
// [i·dt_s, (i+1)·dt_s).
std::vector<WindowStats> analyze_windows(const std::vector<double>& power_w, double dt_s,
                                         double budget_w, const std::vector<double>& windows_s);

}  // namespace fw

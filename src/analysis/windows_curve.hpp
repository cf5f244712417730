#pragma once
// Violation rate against measurement-window length (the "windows curve") and the shortest
// window at which a budget holds. Works on WindowStats from any source: a trace (analyze),
// an episode's accumulators (eval), or a plain power series (the helper below).
//
// Definitions (also in docs/analysis.md, "Windows curve"):
// - A point holds when it judged at least one window and its violation rate ≤ tolerance.
// - A point that judged no window (the series is shorter than half of W) has no verdict:
//   it neither holds nor fails, and is passed over below.
// - shortest_holding_window_s = the shortest window W of the grid such that the point at W
//   holds and so does every longer point that has a verdict; NaN when the longest point
//   with a verdict fails (or no point has one). Requiring every longer window to hold too
//   makes the answer robust to tumbling windows whose rate is not monotone in W.

#include <cmath>
#include <vector>

#include "analysis/windows.hpp"

namespace fw {

// Default grid, 0.5 s to 5 min.
inline const std::vector<double> kDefaultCurveWindowsS = {0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300};

struct WindowsCurve {
  double tolerance = 0;             // 0..1
  std::vector<WindowStats> points;  // sorted by window_s, ascending
  double shortest_holding_window_s = std::nan("");
  // True when point i judged a window and its violation rate ≤ tolerance.
  bool holds(size_t i) const {
    return points[i].windows > 0 && points[i].violation_rate <= tolerance;
  }
};

// From stats already accumulated (any order; sorted here). REQUIRES: 0 ≤ tolerance < 1.
WindowsCurve windows_curve(std::vector<WindowStats> stats, double tolerance);

// From a power series, sample i held over [i·dt_s, (i+1)·dt_s), judged against budget_w.
WindowsCurve windows_curve(const std::vector<double>& power_w, double dt_s, double budget_w,
                           double tolerance,
                           const std::vector<double>& windows_s = kDefaultCurveWindowsS);

}  // namespace fw

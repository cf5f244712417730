#include "analysis/windows_curve.hpp"

#include <algorithm>

namespace fw {

WindowsCurve windows_curve(std::vector<WindowStats> stats, double tolerance) {
  WindowsCurve c;
  c.tolerance = tolerance;
  std::stable_sort(stats.begin(), stats.end(), [](const WindowStats& a, const WindowStats& b) {
    return a.window_s < b.window_s;
  });
  c.points = std::move(stats);
  for (size_t i = c.points.size(); i-- > 0;) {
    if (c.points[i].windows == 0) continue;  // no verdict
    if (!c.holds(i)) break;
    c.shortest_holding_window_s = c.points[i].window_s;
  }
  return c;
}

WindowsCurve windows_curve(const std::vector<double>& power_w, double dt_s, double budget_w,
                           double tolerance, const std::vector<double>& windows_s) {
  return windows_curve(analyze_windows(power_w, dt_s, budget_w, windows_s), tolerance);
}

}  // namespace fw

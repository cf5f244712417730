#pragma once
// A small dependency-free SVG line chart (x/y series with markers and a legend), used by the
// sweep and population reports.

#include <string>
#include <vector>

namespace fw::report {

struct XySeries {
  std::string label;
  std::vector<double> x, y;
  bool dashed = false;             // drawn dashed, no markers (reference lines)
  std::vector<double> y_lo, y_hi;  // optional error bars (same length as y)
};

struct XyPlot {
  std::string title, x_label, y_label;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // axis ranges
  std::vector<XySeries> series;
};

std::string render_xy_svg(const XyPlot& plot);

}  // namespace fw::report

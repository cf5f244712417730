#pragma once
// A dependency-free SVG writer for the one plot flexwatt reports need: power against a
// budget over time, one panel per series, panels stacked and sharing the axes.

#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::report {

struct PowerPanel {
  std::string title;
  std::vector<double> time_s;    // sample times, increasing
  std::vector<double> power_w;   // raw samples (drawn faint)
  std::vector<double> smooth_w;  // trailing-window mean at the same times (drawn bold)
};

struct PowerPlot {
  std::string title;
  std::string smooth_label;  // e.g. "30 s trailing mean"
  double budget_w = 0;       // drawn as a dashed line when > 0
  std::vector<PowerPanel> panels;
};

// Trailing mean over window_s of a series sampled every dt_s (zero-order hold).
std::vector<double> trailing_mean(const std::vector<double>& x, double dt_s, double window_s);

// `s` with <, > and & escaped, for text inside an SVG/XML element.
std::string xml_escape(const std::string& s);

// Renders the plot as a standalone SVG document.
std::string render_svg(const PowerPlot& plot);

}  // namespace fw::report

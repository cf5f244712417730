#include "report/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fw::report {
namespace {

constexpr double kWidth = 960, kPanelH = 150, kLeft = 70, kRight = 20, kTop = 50, kGap = 34;
constexpr size_t kMaxPoints = 1500;  // per polyline; longer series are bucketed

// Polyline points; with more samples than kMaxPoints, each bucket contributes its min and
// max so that spikes stay visible.
std::string points(const std::vector<double>& t, const std::vector<double>& y, double t0, double t1,
                   double y0, double y1, double top) {
  const double w = kWidth - kLeft - kRight;
  auto px = [&](double tv) { return kLeft + (tv - t0) / (t1 - t0) * w; };
  auto py = [&](double yv) { return top + kPanelH - (yv - y0) / (y1 - y0) * kPanelH; };
  std::string out;
  char buf[64];
  const size_t n = std::min(t.size(), y.size());
  const size_t bucket = std::max<size_t>(1, (n + kMaxPoints / 2 - 1) / (kMaxPoints / 2));
  for (size_t i = 0; i < n; i += bucket) {
    const size_t e = std::min(n, i + bucket);
    size_t imin = i, imax = i;
    for (size_t k = i; k < e; ++k) {
      if (y[k] < y[imin]) imin = k;
      if (y[k] > y[imax]) imax = k;
    }
    for (size_t k : {std::min(imin, imax), std::max(imin, imax)}) {
      std::snprintf(buf, sizeof buf, "%.1f,%.1f ", px(t[k]), py(std::clamp(y[k], y0, y1)));
      out += buf;
      if (imin == imax) break;
    }
  }
  return out;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

std::vector<double> trailing_mean(const std::vector<double>& x, double dt_s, double window_s) {
  const size_t n = std::max<size_t>(1, static_cast<size_t>(std::llround(window_s / dt_s)));
  std::vector<double> out(x.size());
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sum += x[i];
    if (i >= n) sum -= x[i - n];
    out[i] = sum / static_cast<double>(std::min(i + 1, n));
  }
  return out;
}

std::string render_svg(const PowerPlot& plot) {
  double t0 = 0, t1 = 1, ymax = plot.budget_w * 1.2;
  bool first = true;
  for (const auto& p : plot.panels) {
    if (p.time_s.empty()) continue;
    t0 = first ? p.time_s.front() : std::min(t0, p.time_s.front());
    t1 = first ? p.time_s.back() : std::max(t1, p.time_s.back());
    first = false;
    for (double v : p.power_w) ymax = std::max(ymax, v);
  }
  if (t1 <= t0) t1 = t0 + 1;
  ymax = std::ceil(ymax / 50.0) * 50.0;
  const double y0 = 0;
  const double height = kTop + plot.panels.size() * (kPanelH + kGap) + 20;
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
                "height=\"100%%\" fill=\"white\"/>\n",
                kWidth, height);
  s += buf;
  std::snprintf(buf, sizeof buf, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n", kLeft,
                xml_escape(plot.title).c_str());
  s += buf;
  std::snprintf(buf, sizeof buf,
                "<text x=\"%.0f\" y=\"40\" fill=\"#555\">grey: 0.5 s samples; blue: %s; red "
                "dashed: budget %.1f W</text>\n",
                kLeft, xml_escape(plot.smooth_label).c_str(), plot.budget_w);
  s += buf;
  for (size_t i = 0; i < plot.panels.size(); ++i) {
    const PowerPanel& p = plot.panels[i];
    const double top = kTop + i * (kPanelH + kGap) + 18;
    const double w = kWidth - kLeft - kRight;
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.0f\" y=\"%.0f\" font-weight=\"bold\">%s</text>\n"
                  "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" "
                  "stroke=\"#999\"/>\n",
                  kLeft, top - 5, xml_escape(p.title).c_str(), kLeft, top, w, kPanelH);
    s += buf;
    for (int k = 0; k <= 4; ++k) {  // y ticks
      const double v = ymax * k / 4;
      const double y = top + kPanelH - v / ymax * kPanelH;
      std::snprintf(buf, sizeof buf,
                    "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">%.0f W</text>\n",
                    kLeft - 4, y + 4, v);
      s += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "<text x=\"%.0f\" y=\"%.0f\" fill=\"#555\">%.0f s</text><text x=\"%.0f\" "
                  "y=\"%.0f\" text-anchor=\"end\" fill=\"#555\">%.0f s</text>\n",
                  kLeft, top + kPanelH + 14, t0, kLeft + w, top + kPanelH + 14, t1);
    s += buf;
    s += "<polyline fill=\"none\" stroke=\"#bbb\" stroke-width=\"0.6\" points=\"" +
         points(p.time_s, p.power_w, t0, t1, y0, ymax, top) + "\"/>\n";
    s += "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.6\" points=\"" +
         points(p.time_s, p.smooth_w, t0, t1, y0, ymax, top) + "\"/>\n";
    if (plot.budget_w > 0) {
      const double y = top + kPanelH - plot.budget_w / ymax * kPanelH;
      std::snprintf(buf, sizeof buf,
                    "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d22\" "
                    "stroke-dasharray=\"6,4\" stroke-width=\"1.2\"/>\n",
                    kLeft, kLeft + w, y, y);
      s += buf;
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace fw::report

#include "report/sweep_plot.hpp"

#include <cstdio>

#include "report/svg_plot.hpp"

namespace fw::report {
namespace {

constexpr double kW = 760, kH = 480, kL = 70, kR = 220, kT = 40, kB = 50;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                               "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

}  // namespace

std::string render_xy_svg(const XyPlot& p) {
  const double pw = kW - kL - kR, ph = kH - kT - kB;
  auto px = [&](double x) { return kL + (x - p.x0) / (p.x1 - p.x0) * pw; };
  auto py = [&](double y) { return kT + ph - (y - p.y0) / (p.y1 - p.y0) * ph; };
  std::string o;
  char b[256];
  std::snprintf(b, sizeof b,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
                "height=\"100%%\" fill=\"white\"/>\n",
                kW, kH);
  o += b;
  std::snprintf(b, sizeof b, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">", kL);
  o += b + xml_escape(p.title) + "</text>\n";
  std::snprintf(b, sizeof b,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                "stroke=\"#888\"/>\n",
                kL, kT, pw, ph);
  o += b;
  for (int i = 0; i <= 5; ++i) {
    const double xv = p.x0 + (p.x1 - p.x0) * i / 5, yv = p.y0 + (p.y1 - p.y0) * i / 5;
    std::snprintf(b, sizeof b,
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.3g</text>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n",
                  px(xv), kT + ph + 16, xv, kL - 6, py(yv) + 4, yv);
    o += b;
  }
  std::snprintf(b, sizeof b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", kL + pw / 2,
                kH - 12);
  o += b + xml_escape(p.x_label) + "</text>\n";
  std::snprintf(b, sizeof b,
                "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
                "text-anchor=\"middle\">",
                kT + ph / 2, kT + ph / 2);
  o += b + xml_escape(p.y_label) + "</text>\n";
  int color = 0;
  for (size_t k = 0; k < p.series.size(); ++k) {
    const XySeries& s = p.series[k];
    const char* c = s.dashed ? "#999" : kColors[color++ % 8];
    o += "<polyline fill=\"none\" stroke=\"";
    o += c;
    o += s.dashed ? "\" stroke-dasharray=\"5,4\" points=\"" : "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      std::snprintf(b, sizeof b, "%.1f,%.1f ", px(s.x[i]), py(s.y[i]));
      o += b;
    }
    o += "\"/>\n";
    for (size_t i = 0; !s.dashed && i < s.x.size() && i < s.y.size(); ++i) {
      std::snprintf(b, sizeof b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                    px(s.x[i]), py(s.y[i]), c);
      o += b;
      if (i < s.y_lo.size() && i < s.y_hi.size()) {
        std::snprintf(b, sizeof b,
                      "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n",
                      px(s.x[i]), px(s.x[i]), py(s.y_lo[i]), py(s.y_hi[i]), c);
        o += b;
      }
    }
    const double ly = kT + 14 + 18 * static_cast<double>(k);
    std::snprintf(b, sizeof b,
                  "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                  "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\">",
                  kW - kR + 12, kW - kR + 32, ly - 4, ly - 4, c, kW - kR + 38, ly);
    o += b + xml_escape(s.label) + "</text>\n";
  }
  o += "</svg>\n";
  return o;
}

}  // namespace fw::report

#include "eval/stats.hpp"

#include <cmath>
#include <cstdio>

namespace fw::eval {

// Two-sided 95 % Student t quantile for df degrees of freedom.
double t975(int df) {
  static const double kT[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                              2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                              2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                              2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return 0;
  if (df <= 30) return kT[df];
  return 1.960 + 2.4 / df;  // within 0.002 of the exact quantile above 30
}

nlohmann::json ratio_json(double a, double b) {
  if (!(std::abs(b) > 0) || !std::isfinite(a / b)) return nullptr;
  return a / b;
}

Stat stat_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= v.size();
  if (v.size() < 2) return s;
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  const double sd = std::sqrt(ss / (v.size() - 1));
  s.ci95 = t975(static_cast<int>(v.size()) - 1) * sd / std::sqrt(static_cast<double>(v.size()));
  return s;
}

nlohmann::json to_json(const Stat& s) {
  return {{"mean", std::isnan(s.mean) ? nlohmann::json(nullptr) : nlohmann::json(s.mean)},
          {"ci95", std::isnan(s.ci95) ? nlohmann::json(nullptr) : nlohmann::json(s.ci95)}};
}

std::string fmt_stat(const Stat& s, double scale, int decimals) {
  char buf[64];
  if (std::isnan(s.mean)) return "-";  // no verdict (e.g. a window longer than the run)
  if (std::isnan(s.ci95)) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, s.mean * scale);
  } else {
    std::snprintf(buf, sizeof buf, "%.*f ±%.*f", decimals, s.mean * scale, decimals,
                  s.ci95 * scale);
  }
  return buf;
}

std::string fmt_ratio(const nlohmann::json& r) {
  if (r.is_null()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r.get<double>());
  return buf;
}

std::string window_key(double w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", w);
  return buf;
}

bool is_headline_window(double w) { return w == 0.5 || w == 30 || w == 300; }

}  // namespace fw::eval

#pragma once
// Statistics across seeds, and the text forms the eval table shows.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vocab/snapshot.hpp"

namespace fw::eval {

// Mean and 95 % confidence half-width (Student t) across seeds; ci95 NaN below 2 seeds.
struct Stat {
  double mean = 0, ci95 = kUnset;
};
Stat stat_of(const std::vector<double>& v);
// {"mean": m, "ci95": c or null}.
nlohmann::json to_json(const Stat& s);

// Two-sided 95 % Student t quantile for df degrees of freedom (0 below 1).
double t975(int df);

// a / b, or null when b is 0 or the ratio is not finite.
nlohmann::json ratio_json(double a, double b);

// "m" or "m ±c" with mean and ci95 scaled and printed with `decimals` decimals.
std::string fmt_stat(const Stat& s, double scale, int decimals);
// "%.3f" of a ratio_json, "-" for null.
std::string fmt_ratio(const nlohmann::json& r);
// A window length as a JSON key and in headers: "%g" ("0.5", "30").
std::string window_key(double w);
// The windows shown in the table and in "violation_rate": 0.5, 30 and 300 s.
bool is_headline_window(double w);

}  // namespace fw::eval

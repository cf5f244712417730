#include "telemetry/reading_ranges.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/format.hpp"

namespace fw {
namespace {

// As an ostream prints a double by default (6 significant digits).
std::string num(double v) { return format_g(v); }

}  // namespace

void sane_range(ReadingField f, double& lo, double& hi) {
  switch (f) {
    case ReadingField::kPower:
    case ReadingField::kCap:
      lo = 0, hi = kMaxGpuPowerW;
      return;
    case ReadingField::kEnergy:
      lo = 0, hi = kMaxEnergyCounterJ;
      return;
    case ReadingField::kUtil:
      lo = 0, hi = 1;
      return;
    case ReadingField::kClock:
      lo = 0, hi = 1e5;
      return;
    case ReadingField::kTemp:
      lo = -273.15, hi = 1000;
      return;
  }
}

bool in_sane_range(ReadingField f, double v) {
  double lo = 0, hi = 0;
  sane_range(f, lo, hi);
  return std::isnan(v) || (v >= lo && v <= hi);
}

std::string range_problem(ReadingField f, double v) {
  if (in_sane_range(f, v)) return "";
  double lo = 0, hi = 0;
  sane_range(f, lo, hi);
  const std::string range = "outside " + num(lo) + ".." + num(hi);
  switch (f) {
    case ReadingField::kPower:
    case ReadingField::kCap:
      return num(v) + " W is " + range +
             " W, beyond any GPU (a node's total, or kW or mW taken for W?)";
    case ReadingField::kEnergy:
      return num(v) + " J is " + range + " J for an energy counter";
    case ReadingField::kUtil:
      return num(v) + " is " + range + " (utilisation as a fraction: 0.5 for 50 %)";
    case ReadingField::kClock:
      return num(v) + " MHz is " + range + " MHz";
    case ReadingField::kTemp:
      return num(v) + " degrees C is " + range;
  }
  return "";
}

}  // namespace fw

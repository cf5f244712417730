#include "telemetry/reading_ranges.hpp"

#include <cmath>
#include <sstream>

namespace fw {
namespace {

std::string fmt_num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

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

std::string range_problem(ReadingField f, double v) {
  double lo = 0, hi = 0;
  sane_range(f, lo, hi);
  if (std::isnan(v) || (v >= lo && v <= hi)) return "";
  const std::string range = "outside " + fmt_num(lo) + ".." + fmt_num(hi);
  switch (f) {
    case ReadingField::kPower:
    case ReadingField::kCap:
      return fmt_num(v) + " W is " + range +
             " W, beyond any GPU (a node's total, or kW or mW taken for W?)";
    case ReadingField::kEnergy:
      return fmt_num(v) + " J is " + range + " J for an energy counter";
    case ReadingField::kUtil:
      return fmt_num(v) + " is " + range + " (utilisation as a fraction: 0.5 for 50 %)";
    case ReadingField::kClock:
      return fmt_num(v) + " MHz is " + range + " MHz";
    case ReadingField::kTemp:
      return fmt_num(v) + " degrees C is " + range;
  }
  return "";
}

}  // namespace fw

#pragma once
// The vocabulary's units and its one sentinel. Quantities are SI and say their unit in their
// name (power_w, energy_j, time_s, ramp_w_per_s, clock_mhz; fractions end in _frac or are
// documented 0..1); a value not measured or not commanded is kUnset (NaN), tested with
// std::isnan, never compared.

#include <limits>

namespace fw {

inline constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

}  // namespace fw

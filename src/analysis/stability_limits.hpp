#pragma once
// Limits an operator checks a stability report against (`flexwatt analyze --stability
// --max-ramp-w-per-s ...`; docs/stability.md, "Limits"). A limit not given (NaN) is not
// checked.
//
// - max_ramp_w_per_s: the ramp at window_s (the larger of max_up and max_down, W/s) must
//   not exceed it.
// - max_ramp_frac_per_s: the same ramp divided by the series' peak (fraction of peak per
//   second) must not exceed it.
// - max_band_frac: the band energy fraction (0..1) must not exceed it.
// A limit that the trace cannot judge (the ramp window is not computed — shorter than the
// sample period or longer than half the trace — or the band lies above Nyquist) is an error
// (InvalidArgument naming the flag), never a pass.

#include <string>
#include <vector>

#include "analysis/stability.hpp"
#include "core/status.hpp"

namespace fw {

struct StabilityLimits {
  double max_ramp_w_per_s = kUnset;     // > 0
  double max_ramp_frac_per_s = kUnset;  // > 0
  double max_band_frac = kUnset;        // in [0, 1]
  double window_s = 1;                  // the ramp window the ramp limits judge; > 0
  bool any() const;
};

struct LimitCheck {
  std::string name;  // the flag without dashes: "max_ramp_w_per_s", ...
  double limit = 0, value = 0;
  double window_s = kUnset;  // ramp limits: the window judged
  bool violated = false;
};

// Validates the values (InvalidArgument naming the flag).
Status validate(const StabilityLimits& l);

// One check per limit given, in the order above. `r` must hold a ramp at l.window_s when a
// ramp limit is given (StabilityOptions::ramp_windows_s: the CLI adds it).
Result<std::vector<LimitCheck>> check_limits(const StabilityReport& r, const StabilityLimits& l);

}  // namespace fw

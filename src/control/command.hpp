#pragma once
// What a controller asks of a plant for one decision. Anything NaN is left as it is.

#include <cmath>
#include <vector>

#include "telemetry/snapshot.hpp"

namespace fw {

struct Command {
  std::vector<double> power_cap_w;  // per GPU (plant index); empty or NaN: unchanged
  std::vector<KnobValues> knobs;    // per job (plant index); empty or NaN: unchanged

  bool empty() const { return power_cap_w.empty() && knobs.empty(); }
  // True when any actuator is set (not NaN): the command would change something.
  bool any_set() const {
    for (double v : power_cap_w) {
      if (!std::isnan(v)) return true;
    }
    for (const KnobValues& k : knobs) {
      for (double v : k) {
        if (!std::isnan(v)) return true;
      }
    }
    return false;
  }
};

}  // namespace fw

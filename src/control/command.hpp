#pragma once
// What a controller asks of a plant for one decision. Anything NaN is left as it is.

#include <vector>

#include "telemetry/snapshot.hpp"

namespace fw {

struct Command {
  std::vector<double> power_cap_w;  // per GPU (plant index); empty or NaN: unchanged
  std::vector<KnobValues> knobs;    // per job (plant index); empty or NaN: unchanged

  bool empty() const { return power_cap_w.empty() && knobs.empty(); }
};

}  // namespace fw

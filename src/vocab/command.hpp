#pragma once
// What a controller asks of a plant for one decision. Anything NaN is left as it is.

#include <cmath>
#include <vector>

#include "vocab/actuator_table.hpp"

namespace fw {

struct Command {
  std::vector<double> power_cap_w;  // per GPU (plant index); empty or NaN: unchanged
  std::vector<KnobValues> knobs;    // per job (plant index); empty or NaN: unchanged
  // Per GPU (plant index): kGpuSettingTable's rows (power smoothing, fill); empty or NaN:
  // unchanged. Only a plant that models them applies them.
  std::vector<GpuSettingValues> gpu_settings;

  bool empty() const { return power_cap_w.empty() && knobs.empty() && gpu_settings.empty(); }
  // True when any kGpuSettingTable entry is set: only a plant that models power smoothing and
  // fill applies the command; any other refuses it whole (NotSupported, nothing applied).
  bool sets_gpu_settings() const {
    for (const GpuSettingValues& g : gpu_settings) {
      for (double v : g) {
        if (!std::isnan(v)) return true;
      }
    }
    return false;
  }
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
    return sets_gpu_settings();
  }
};

}  // namespace fw

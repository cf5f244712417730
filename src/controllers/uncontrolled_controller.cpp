#include "controllers/uncontrolled_controller.hpp"

#include <cmath>

#include "control/actuator.hpp"

namespace fw {

Command UncontrolledController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  Command c = blank_command(info);
  for (size_t g = 0; g < info.gpus.size(); ++g) c.power_cap_w[g] = info.gpus[g].default_cap_w;
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    for (int k = 0; k < kNumKnobs; ++k) {
      const KnobRange& r = info.jobs[j].knob_ranges[k];
      if (!r.available) continue;
      const double configured = info.jobs[j].default_knobs[k];
      c.knobs[j][k] = std::isfinite(configured) ? configured : r.max;
    }
  }
  return c;
}

}  // namespace fw

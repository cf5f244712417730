#include "controllers/static_controller.hpp"

#include <algorithm>
#include <cmath>

#include "controllers/uncontrolled_controller.hpp"

namespace fw {

Command StaticController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  Command c = UncontrolledController().update(obs);
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    for (int q = 0; q < kNumKnobs; ++q) {
      const KnobRange& r = info.jobs[j].knob_ranges[q];
      if (!std::isnan(hold_[q]) && r.available && j < c.knobs.size()) {
        c.knobs[j][q] = std::clamp(hold_[q], r.min, r.max);
      }
    }
    // A held actuator knob keeps its hold (the joint search's knob-only settings).
    if (actuator_.kind == Actuator::Kind::kKnob && !std::isnan(hold_[actuator_.index()])) continue;
    const Ladder l = job_ladder(info, j, actuator_);
    const double v = std::isnan(value_) ? l.at_fraction(fraction_) : value_;
    set_job_setting(info, j, actuator_, v, c);
  }
  return c;
}

}  // namespace fw

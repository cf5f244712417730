#include "controllers/scheduled_static_controller.hpp"

namespace fw {

Command ScheduledStaticController::update(const Observation& obs) {
  size_t k = 0;
  while (k + 1 < segments_.size() && segments_[k + 1].start_s <= obs.time_s + 1e-9) ++k;
  return segments_[k].setting.update(obs);
}

ActuatorSet ScheduledStaticController::claims() const {
  ActuatorSet s;
  for (const Segment& g : segments_) s |= g.setting.claims();
  return s;
}

}  // namespace fw

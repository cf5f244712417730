#include "controllers/static_scheduled_controller.hpp"

namespace fw {

Command ScheduledStaticController::update(const Observation& obs) {
  size_t i = 0;
  while (i + 1 < segments_.size() && segments_[i + 1].switch_s <= obs.time_s) ++i;
  return segments_[i].setting.update(obs);
}

ActuatorSet ScheduledStaticController::claims() const {
  ActuatorSet s;
  for (const Segment& g : segments_) s |= g.setting.claims();
  return s;
}

}  // namespace fw

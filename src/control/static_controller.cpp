#include "control/static_controller.hpp"

#include <cmath>

#include "control/uncontrolled_controller.hpp"

namespace fw {

Command StaticController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  Command c = UncontrolledController().update(obs);
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    const Ladder l = job_ladder(info, j, actuator_);
    const double v = std::isnan(value_) ? l.at_fraction(fraction_) : value_;
    set_job_setting(info, j, actuator_, v, c);
  }
  return c;
}

}  // namespace fw

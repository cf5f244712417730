#include "controllers/threshold_controller.hpp"

#include <cmath>

#include "controllers/uncontrolled_controller.hpp"

namespace fw {

Command ThresholdController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  if (rung_.size() != info.jobs.size()) rung_.assign(info.jobs.size(), -1);
  Command c = UncontrolledController().update(obs);  // non-actuated settings as uncontrolled
  const double span = cfg_.measure_s > 0 ? cfg_.measure_s : obs.budget->window_s;
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    const Ladder l = job_ladder(info, j, cfg_.actuator);
    if (rung_[j] < 0) {
      const double now = job_setting(info, obs.latest(), j, cfg_.actuator);
      rung_[j] = std::isfinite(now) ? l.index_of(now) : l.size() - 1;
    }
    const double ratio = obs.job_ratio(j, span);
    if (ratio > cfg_.upper) {
      rung_[j] = std::max(0, rung_[j] - cfg_.step_rungs);
    } else if (ratio < cfg_.lower) {
      rung_[j] = std::min(l.size() - 1, rung_[j] + cfg_.step_rungs);
    }
    set_job_setting(info, j, cfg_.actuator, l.value(rung_[j]), c);
  }
  return c;
}

}  // namespace fw

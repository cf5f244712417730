#include "controllers/pid_controller.hpp"

#include <algorithm>
#include <cmath>

#include "controllers/uncontrolled_controller.hpp"

namespace fw {

void PidController::reset(const PlantInfo& info) { state_.assign(info.jobs.size(), State{}); }

Command PidController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  if (state_.size() != info.jobs.size()) state_.assign(info.jobs.size(), State{});
  Command c = UncontrolledController().update(obs);  // non-actuated settings as uncontrolled
  const bool peak = cfg_.signal == PidConfig::Signal::kPeak;
  const double span = cfg_.measure_s > 0 ? cfg_.measure_s : (peak ? 120 : obs.budget->window_s);
  const double dt = cfg_.period_s;
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    State& s = state_[j];
    const Ladder l = job_ladder(info, j, cfg_.actuator);
    const double m =
        peak ? obs.job_peak_ratio(j, obs.budget->window_s, span) : obs.job_ratio(j, span);
    const double e = cfg_.target - m;
    if (!s.started) {
      const double now = job_setting(info, obs.latest(), j, cfg_.actuator);
      s.integral = (std::isfinite(now) && l.max > l.min) ? (now - l.min) / (l.max - l.min) : 1.0;
      s.integral = std::clamp(s.integral, 0.0, 1.0);
      s.last_error = e;
      s.started = true;
    }
    const double deriv = (e - s.last_error) / dt;
    s.last_error = e;
    const double raw = s.integral + cfg_.kp * e + cfg_.kd * deriv;
    const bool saturated = (raw >= 1 && e > 0) || (raw <= 0 && e < 0);
    if (!saturated) s.integral = std::clamp(s.integral + cfg_.ki * e * dt, 0.0, 1.0);
    const double u = std::clamp(s.integral + cfg_.kp * e + cfg_.kd * deriv, 0.0, 1.0);
    set_job_setting(info, j, cfg_.actuator, l.at_fraction(u), c);
  }
  return c;
}

}  // namespace fw

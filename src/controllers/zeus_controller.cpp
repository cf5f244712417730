#include "controllers/zeus_controller.hpp"

#include <cmath>
#include <limits>

#include "control/actuator.hpp"
#include "controllers/uncontrolled_controller.hpp"

namespace fw {

void ZeusController::reset(const PlantInfo& info) {
  jobs_.assign(info.jobs.size(), JobState{});
  const Actuator caps;  // kCaps
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    const Ladder l = job_ladder(info, j, caps, cfg_.cap_step_w);
    for (double c = l.max; c >= l.min - 1e-9; c -= cfg_.cap_step_w) jobs_[j].caps.push_back(c);
    if (jobs_[j].caps.empty()) jobs_[j].caps.push_back(l.max);
  }
}

std::vector<double> ZeusController::chosen_caps_w() const {
  std::vector<double> out;
  for (const JobState& s : jobs_) {
    out.push_back(s.phase == JobState::Phase::kDone ? s.chosen_w : kUnset);
  }
  return out;
}

double ZeusController::choose(const JobState& s, double max_power_w) const {
  double best = s.caps.front(), best_cost = std::numeric_limits<double>::infinity();
  for (const Measurement& m : s.measurements) {
    if (!(m.tokens > 0)) continue;
    const double cost =
        (cfg_.eta * m.energy_j + (1 - cfg_.eta) * max_power_w * m.time_s) / m.tokens;
    if (cost < best_cost) best_cost = cost, best = m.cap_w;
  }
  return best;
}

Command ZeusController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  if (jobs_.size() != info.jobs.size()) reset(info);
  Command c = UncontrolledController().update(obs);
  const Snapshot& snap = obs.latest();
  const double t = obs.time_s;
  using P = JobState::Phase;
  for (size_t j = 0; j < info.jobs.size(); ++j) {
    JobState& s = jobs_[j];
    const double steps = j < snap.jobs.size() ? snap.jobs[j].steps_total : 0;
    const double tokens = j < snap.jobs.size() ? snap.jobs[j].tokens_total : 0;
    const double power_w = unit_power_w(snap, info.jobs[j].gpus);
    // Energy of the job's GPUs, held power over the time since the last poll.
    s.energy_j += power_w * (t - s.last_t);
    s.last_t = t;
    const double in_phase = t - s.phase_start_s;
    auto begin = [&](P phase) {
      s.phase = phase;
      s.phase_start_s = t;
      s.energy_j = 0;
      s.start_tokens = tokens;
      s.start_steps = steps;
    };
    if (s.phase == P::kStart) {
      begin(P::kWarmup);
    } else if (s.phase == P::kWarmup) {
      const bool stepped = steps - s.start_steps >= cfg_.warmup_steps;
      if ((stepped && in_phase >= cfg_.min_warmup_s) || in_phase >= cfg_.max_phase_s) {
        begin(P::kProfile);
      }
    } else if (s.phase == P::kProfile) {
      const bool stepped = steps - s.start_steps >= cfg_.profile_steps;
      if ((stepped && in_phase >= cfg_.min_profile_s) || in_phase >= cfg_.max_phase_s) {
        s.measurements.push_back({s.caps[s.index], s.energy_j, in_phase, tokens - s.start_tokens});
        if (s.index + 1 < s.caps.size()) {
          ++s.index;
          begin(P::kWarmup);
        } else {
          s.phase = P::kDone;
          s.chosen_w = choose(s, s.caps.front() * static_cast<double>(info.jobs[j].gpus.size()));
        }
      }
    }
    const double cap = s.phase == P::kDone ? s.chosen_w : s.caps[s.index];
    set_job_setting(info, j, Actuator{}, cap, c);
  }
  return c;
}

}  // namespace fw

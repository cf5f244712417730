#include "control/fleet_controller.hpp"

#include <algorithm>
#include <cmath>

#include "control/actuator.hpp"

namespace fw {

std::vector<double> split_budget_w(double total_w, const std::vector<double>& weights,
                                   const std::vector<double>& cap_w) {
  const size_t n = weights.size();
  std::vector<double> w(weights);
  double w_sum = 0;
  for (double x : w) w_sum += std::max(0.0, x);
  if (!(w_sum > 0)) {
    w.assign(n, 1.0);
    w_sum = static_cast<double>(n);
  }
  for (double& x : w) x = std::max(0.0, x);
  std::vector<double> s(n, 0.0);
  if (n == 0) return s;
  double cap_sum = 0;
  for (double c : cap_w) cap_sum += std::max(0.0, c);
  if (cap_sum <= total_w) {
    for (size_t j = 0; j < n; ++j)
      s[j] = std::max(0.0, cap_w[j]) + (total_w - cap_sum) * w[j] / w_sum;
    return s;
  }
  // Water level λ: jobs whose cap lies below λ·w are fixed at their cap; repeat until stable.
  std::vector<bool> fixed(n, false);
  for (size_t round = 0; round <= n; ++round) {
    double left = total_w, w_free = 0;
    for (size_t j = 0; j < n; ++j) {
      if (fixed[j]) {
        left -= std::max(0.0, cap_w[j]);
      } else {
        w_free += w[j];
      }
    }
    const double lambda = w_free > 0 ? std::max(0.0, left) / w_free : 0.0;
    bool changed = false;
    for (size_t j = 0; j < n; ++j) {
      if (!fixed[j] && std::max(0.0, cap_w[j]) < lambda * w[j]) {
        fixed[j] = true;
        changed = true;
      }
    }
    if (!changed) {
      for (size_t j = 0; j < n; ++j) s[j] = fixed[j] ? std::max(0.0, cap_w[j]) : lambda * w[j];
      return s;
    }
  }
  return s;  // unreachable: each round fixes at least one job
}

void FleetController::reset(const PlantInfo& info) {
  state_.assign(info.jobs.size(), JobState{});
  shares_w_.assign(info.jobs.size(), 0.0);
  demands_w_.assign(info.jobs.size(), 0.0);
}

Command FleetController::update(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  const size_t n_jobs = info.jobs.size();
  if (state_.size() != n_jobs) reset(info);
  Command cmd = blank_command(info);
  if (n_jobs == 0) return cmd;

  // 2. Demands over the trailing span.
  const size_t k = obs.samples_in(cfg_.measure_s);
  for (size_t j = 0; j < n_jobs; ++j) {
    double sum = 0;
    for (size_t a = 0; a < k; ++a) sum += unit_power_w(obs.history->at_age(a), info.jobs[j].gpus);
    demands_w_[j] = sum / static_cast<double>(k);
  }

  // 1 + 3. Shares.
  const Budget& b = *obs.budget;
  const int knob = static_cast<int>(Knob::kGenConcurrency);
  const Snapshot& now = obs.latest();
  auto controllable = [&](size_t j) {
    return info.jobs[j].knob_ranges[knob].available && j < now.jobs.size() &&
           now.jobs[j].phase == Phase::kGenerate;
  };
  if (b.scope == BudgetScope::kNode || b.scope == BudgetScope::kFleet) {
    // Jobs the knob cannot move now keep what they draw; the rest is split among the others.
    double left_w = cfg_.target * b.watts;
    idx_.clear();
    weights_.clear();
    caps_w_.clear();
    for (size_t j = 0; j < n_jobs; ++j) {
      if (!controllable(j)) {
        shares_w_[j] = demands_w_[j];
        left_w -= demands_w_[j];
        continue;
      }
      double w = 0;
      if (cfg_.weight == FleetControllerConfig::Weight::kDemand) {
        w = demands_w_[j];
      } else {
        for (int g : info.jobs[j].gpus) {
          if (g >= 0 && g < static_cast<int>(info.gpus.size())) w += info.gpus[g].tdp_w;
        }
      }
      idx_.push_back(j);
      weights_.push_back(w);
      caps_w_.push_back(demands_w_[j] * (1 + cfg_.grow));
    }
    const std::vector<double> s = split_budget_w(std::max(0.0, left_w), weights_, caps_w_);
    for (size_t i = 0; i < idx_.size(); ++i) shares_w_[idx_[i]] = s[i];
  } else {
    for (size_t j = 0; j < n_jobs; ++j) {
      const double n_gpus = static_cast<double>(info.jobs[j].gpus.size());
      shares_w_[j] = cfg_.target * b.watts * (b.scope == BudgetScope::kGpu ? n_gpus : 1.0);
    }
  }

  // 4. Per-job PI on gen_concurrency.
  for (size_t j = 0; j < n_jobs; ++j) {
    const KnobRange& r = info.jobs[j].knob_ranges[knob];
    if (!r.available || r.max < r.min || r.min <= 0) continue;
    JobState& st = state_[j];
    if (!st.started) {
      double c0 = r.max;
      if (j < now.jobs.size() && std::isfinite(now.jobs[j].knobs[knob]))
        c0 = now.jobs[j].knobs[knob];
      st.log_c = std::log(std::clamp(c0, r.min, r.max));
      st.started = true;
    }
    const double share = shares_w_[j];
    const double e = share > 0 ? std::clamp((share - demands_w_[j]) / share, -1.0, 1.0) : -1.0;
    if (controllable(j)) {
      st.log_c += cfg_.ki * e + cfg_.kp * (e - st.last_error);
      st.log_c = std::clamp(st.log_c, std::log(r.min), std::log(r.max));
    }
    st.last_error = e;
    double c = std::exp(st.log_c);
    if (r.step > 0) c = r.min + std::round((c - r.min) / r.step) * r.step;
    cmd.knobs[j][knob] = std::clamp(c, r.min, r.max);
  }
  return cmd;
}

}  // namespace fw

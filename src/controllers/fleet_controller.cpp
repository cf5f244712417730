#include "controllers/fleet_controller.hpp"

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
  gpu_cap_w_.assign(info.gpus.size(), kUnset);
  last_excess_w_.assign(info.jobs.size() + 1, 0.0);
}

void FleetController::update_caps(const PlantInfo& info, const std::vector<size_t>& group,
                                  double target_w, double& last_excess_w) {
  auto valid = [&](int g) { return g >= 0 && g < static_cast<int>(info.gpus.size()); };
  double p_w = 0, w_sum = 0;
  for (size_t j : group) {
    p_w += demands_w_[j];
    for (int g : info.jobs[j].gpus)
      if (valid(g)) w_sum += info.gpus[g].tdp_w;
  }
  const double e_w = p_w - target_w;
  const double dc_w = -(cfg_.cap_ki * e_w + cfg_.cap_kp * (e_w - last_excess_w));
  last_excess_w = e_w;
  if (dc_w < 0) {
    std::vector<double> over(group.size(), 0.0);
    double over_sum = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      const size_t j = group[i];
      double w = 0;
      for (int g : info.jobs[j].gpus)
        if (valid(g)) w += info.gpus[g].tdp_w;
      const double fair_w = w_sum > 0 ? target_w * w / w_sum : 0.0;
      over[i] = std::max(0.0, demands_w_[j] - fair_w);
      over_sum += over[i];
    }
    if (!(over_sum > 0)) return;
    for (size_t i = 0; i < group.size(); ++i) {
      if (over[i] <= 0) continue;
      const JobInfo& job = info.jobs[group[i]];
      const double n = static_cast<double>(job.gpus.size());
      if (n <= 0) continue;
      const double per_gpu_demand_w = demands_w_[group[i]] / n;
      const double cut_w = -dc_w * over[i] / over_sum / n;
      for (int g : job.gpus) {
        if (!valid(g)) continue;
        const GpuInfo& gi = info.gpus[g];
        const double from_w = std::isnan(gpu_cap_w_[g])
                                  ? std::min(gi.default_cap_w, per_gpu_demand_w)
                                  : std::min(gpu_cap_w_[g], per_gpu_demand_w);
        gpu_cap_w_[g] = std::clamp(from_w - cut_w, gi.min_cap_w, gi.default_cap_w);
      }
    }
  } else {
    double n_capped = 0;
    for (size_t j : group)
      for (int g : info.jobs[j].gpus)
        if (valid(g) && !std::isnan(gpu_cap_w_[g])) n_capped += 1;
    if (n_capped <= 0) return;
    const double raise_w = dc_w / n_capped;
    for (size_t j : group) {
      for (int g : info.jobs[j].gpus) {
        if (!valid(g) || std::isnan(gpu_cap_w_[g])) continue;
        gpu_cap_w_[g] = std::min(gpu_cap_w_[g] + raise_w, info.gpus[g].default_cap_w);
      }
    }
  }
}

// Long by design: measure, split, integrate and cut are one decision over shared per-job arrays.
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

  // 5. Power caps.
  if (cfg_.caps) {
    if (gpu_cap_w_.size() != info.gpus.size()) gpu_cap_w_.assign(info.gpus.size(), kUnset);
    if (last_excess_w_.size() != n_jobs + 1) last_excess_w_.assign(n_jobs + 1, 0.0);
    if (b.scope == BudgetScope::kNode || b.scope == BudgetScope::kFleet) {
      std::vector<size_t> all(n_jobs);
      for (size_t j = 0; j < n_jobs; ++j) all[j] = j;
      update_caps(info, all, cfg_.target * b.watts, last_excess_w_[n_jobs]);
    } else {
      for (size_t j = 0; j < n_jobs; ++j) update_caps(info, {j}, shares_w_[j], last_excess_w_[j]);
    }
    for (size_t g = 0; g < info.gpus.size(); ++g) {
      if (std::isnan(gpu_cap_w_[g])) continue;
      cmd.power_cap_w[g] = gpu_cap_w_[g];
      if (gpu_cap_w_[g] >= info.gpus[g].default_cap_w) gpu_cap_w_[g] = kUnset;  // released
    }
  }
  return cmd;
}

}  // namespace fw

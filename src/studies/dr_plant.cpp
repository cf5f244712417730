#include "studies/dr_plant.hpp"

#include <algorithm>
#include <cmath>

namespace fw::studies {
namespace {

// sd of the mean of n samples of a unit AR(1) process with lag-one correlation rho.
double ar1_mean_sd(double rho, double n) {
  if (rho <= 0) return 1 / std::sqrt(n);
  const double v = (1 / n) * ((1 + rho) / (1 - rho) -
                              2 * rho * (1 - std::pow(rho, n)) / (n * (1 - rho) * (1 - rho)));
  return std::sqrt(std::max(v, 1e-12));
}

}  // namespace

bool dr_in_dip(const DrJobSpec& j, double t) {
  if (j.dips.period_s <= 0 || t < j.dips.phase_s) return false;
  return std::fmod(t - j.dips.phase_s, j.dips.period_s) < j.dips.duration_s;
}

DrReplayPlant::DrReplayPlant(const DrEvent& ev) : ev_(ev), rng_(Rng::stream(ev.seed, "dr.plant")) {
  const double dt = ev.sample_period_s;
  rho_ = std::exp(-dt / ev.noise_tau_s);
  const double k = ar1_mean_sd(rho_, 60 / dt);
  for (int j = 0; j < static_cast<int>(ev.jobs.size()); ++j) {
    const auto& job = ev.jobs[j];
    const int n = (job.gpus + ev.gpus_per_node - 1) / ev.gpus_per_node;
    for (int i = 0; i < n; ++i) {
      const int g = std::min(ev.gpus_per_node, job.gpus - i * ev.gpus_per_node);
      nodes_.push_back({j, g});
      // Nodes independent: the job's 1-minute sd f needs f·sqrt(n) per node.
      sigma_.push_back(job.noise_frac_1min * std::sqrt(static_cast<double>(n)) / k);
      cap_w_.push_back(job.curve.back().cap_w);
    }
  }
  Rng err = Rng::stream(ev.seed, "dr.plant.error");
  for (size_t j = 0; j < ev.jobs.size(); ++j) {
    job_error_.push_back(1 + ev.plant_error_frac * err.uniform(-1, 1));
  }
  noise_.assign(nodes_.size(), 0);
  for (size_t i = 0; i < noise_.size(); ++i) noise_[i] = sigma_[i] * rng_.normal();
  paused_.assign(ev.jobs.size(), false);
  resume_until_s_.assign(ev.jobs.size(), -1);
  r_.node_power_w.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto& job = ev.jobs[nodes_[i].job];
    r_.node_power_w[i] = nodes_[i].gpus * dr_power_at(job, cap_w_[i]) * job_error_[nodes_[i].job];
  }
  r_.job_t_rel.assign(ev.jobs.size(), 1);
  r_.job_paused.assign(ev.jobs.size(), false);
}

void DrReplayPlant::write(const DrCommand& cmd, double now_s) {
  for (size_t i = 0; i < nodes_.size() && i < cmd.node_cap_w.size(); ++i) {
    const auto& c = ev_.jobs[nodes_[i].job].curve;
    if (std::isfinite(cmd.node_cap_w[i])) {
      cap_w_[i] = std::clamp(cmd.node_cap_w[i], c.front().cap_w, c.back().cap_w);
    }
  }
  for (size_t j = 0; j < paused_.size() && j < cmd.job_pause.size(); ++j) {
    if (paused_[j] && !cmd.job_pause[j]) resume_until_s_[j] = now_s + ev_.resume_s;
    paused_[j] = cmd.job_pause[j];
  }
}

void DrReplayPlant::step(double now_s) {
  const double dt = ev_.sample_period_s;
  const double alpha = ev_.cap_lag_s > 0 ? 1 - std::exp(-dt / ev_.cap_lag_s) : 1;
  const double innov = std::sqrt(1 - rho_ * rho_);
  std::vector<double> slowest(ev_.jobs.size(), 1e300);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int j = nodes_[i].job;
    const auto& job = ev_.jobs[j];
    noise_[i] = rho_ * noise_[i] + innov * sigma_[i] * rng_.normal();
    double per_gpu =
        std::min(cap_w_[i], dr_power_at(job, cap_w_[i]) * job_error_[j] * (1 + noise_[i]));
    if (dr_in_dip(job, now_s)) per_gpu *= job.dips.level;
    const bool resuming = now_s < resume_until_s_[j];
    if (paused_[j]) per_gpu = 0;
    if (resuming) per_gpu *= 0.5;
    const double level = std::max(0.0, per_gpu) * nodes_[i].gpus;
    r_.node_power_w[i] += alpha * (level - r_.node_power_w[i]);
    slowest[j] = std::min(slowest[j], dr_t_rel_at(job, cap_w_[i]));
  }
  for (size_t j = 0; j < ev_.jobs.size(); ++j) {
    const bool off = paused_[j] || now_s < resume_until_s_[j];
    r_.job_paused[j] = off;
    r_.job_t_rel[j] = off ? 0 : slowest[j];
  }
  r_.time_s = now_s;
}

}  // namespace fw::studies

#include "sim/cluster.hpp"

#include <algorithm>
#include <cmath>

namespace fw::sim {

KnobRange knob_range(const JobSpec& s, int q) {
  if (q < 0 || q >= kNumKnobs || !responds_to_knob(s.kind, q)) return {};
  return {true, s.knob_min[q], s.knob_max[q], kActuatorTable[q].ladder.step};
}

Cluster::Cluster(const SimParams& sim, std::vector<ClusterGpu> gpus, std::vector<JobSpec> jobs,
                 uint64_t seed)
    : sim_(sim), specs_(std::move(jobs)), seed_(seed) {
  n_ring_ = std::clamp(static_cast<int>(std::lround(1.0 / sim_.dt_s)), 1, 64);
  energy_every_ = std::max(1, static_cast<int>(std::lround(0.1 / sim_.dt_s)));
  fw_params_ = {sim_.fw_sense_tau_s, sim_.clock_tau_s, sim_.clock_up_tau_s, sim_.cap_margin_frac};
  fw_coeffs_ = firmware_coeffs(fw_params_, sim_.dt_s);
  a_temp_ = 1.0 - std::exp(-sim_.dt_s / sim_.thermal_tau_s);
  const Rng noise_root = Rng::stream(seed, "sim.noise");
  const Rng job_root = Rng::stream(seed, "sim.jobs");
  gpus_.resize(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    Gpu& g = gpus_[i];
    g.preset = gpus[i].preset;
    g.cap_w = std::clamp(gpus[i].power_cap_w, g.preset->min_cap_w, g.preset->max_cap_w);
    g.pipe_cap_w = g.cap_w;
    g.temp_c = sim_.ambient_c + sim_.thermal_c_per_w * g.preset->idle_bare_w;
    g.p_inst = g.preset->idle_bare_w;
    g.ring.fill(g.p_inst);
    g.ring_sum = g.p_inst * n_ring_;
    g.noise = noise_root.child(i);
    info_.gpus.push_back({std::string(g.preset->name), g.preset->min_cap_w, g.preset->max_cap_w,
                          g.preset->tdp_w, g.preset->tdp_w});
  }
  jobs_.resize(specs_.size());
  pipes_.resize(specs_.size());
  shares_redrawn_.assign(specs_.size(), 0);
  for (size_t j = 0; j < specs_.size(); ++j) {
    const JobSpec& s = specs_[j];
    WorkloadState& st = jobs_[j];
    st.rng = job_root.child(j);
    for (int gi : s.gpus) gpus_[gi].job = static_cast<int>(j);
    init_heterogeneity(s, Rng::stream(seed, "sim.hetero"));
    JobInfo ji;
    ji.name = s.name;
    ji.kind = s.kind == JobKind::kGrpo       ? "grpo"
              : s.kind == JobKind::kPipeline ? "pipeline"
                                             : "pretrain";
    ji.gpus = s.gpus;
    for (int q = 0; q < kNumKnobs; ++q) {
      ji.knob_ranges[q] = knob_range(s, q);
      if (!ji.knob_ranges[q].available) continue;
      ji.default_knobs[q] = s.knobs[q];
      st.knobs[q] = s.knobs[q];
    }
    info_.jobs.push_back(std::move(ji));
  }
}

void Cluster::init_heterogeneity(const JobSpec& s, const Rng& root) {
  const Heterogeneity& h = s.hetero;
  for (int gi : s.gpus) {
    Gpu& g = gpus_[gi];
    Rng r = root.child(static_cast<uint64_t>(gi));
    g.offset_w = h.offset_sd_frac > 0 ? r.normal(0.0, h.offset_sd_frac * g.preset->tdp_w) : 0.0;
    g.work_share = 1.0 - h.imbalance * r.uniform();
    g.noise_sd_w = h.noise_sd_w;
    g.noise_rho = std::exp(-sim_.dt_s / h.noise_tau_s);
    g.noise_w = h.noise_sd_w > 0 ? r.normal(0.0, h.noise_sd_w) : 0.0;
  }
  if (h.imbalance > 0 && !s.gpus.empty()) {  // the busiest GPU sets the pace: share 1
    double top = 0;
    for (int gi : s.gpus) top = std::max(top, gpus_[gi].work_share);
    for (int gi : s.gpus) gpus_[gi].work_share /= top;
  }
}

void Cluster::redraw_work_shares(const JobSpec& s) {
  const Rng root = Rng::stream(seed_, "sim.hetero.change");
  double top = 0;
  for (int gi : s.gpus) {
    Rng r = root.child(static_cast<uint64_t>(gi));
    gpus_[gi].work_share = 1.0 - s.hetero.imbalance_after * r.uniform();
    top = std::max(top, gpus_[gi].work_share);
  }
  for (int gi : s.gpus) gpus_[gi].work_share /= top;  // the busiest GPU sets the pace: share 1
}

void Cluster::step() {
  const double t0 = time_s();
  const double dt = sim_.dt_s;
  for (size_t j = 0; j < specs_.size(); ++j) {
    const JobSpec& s = specs_[j];
    WorkloadState& st = jobs_[j];
    if (s.kind == JobKind::kPipeline) {
      step_pipeline(j, t0);
      continue;
    }
    if (t0 + 1e-9 >= s.end_s) {  // departed: no context, no progress (JobSpec::end_s)
      st.started = false;
      continue;
    }
    if (!st.started) {
      if (t0 + 1e-9 < s.start_s) continue;
      start_job(s, st, sim_.dt_s);
    }
    if (s.hetero.change_at_s > 0 && !shares_redrawn_[j] && t0 + 1e-9 >= s.hetero.change_at_s) {
      redraw_work_shares(s);
      shares_redrawn_[j] = 1;
    }
    // The job runs at its slowest GPU's effective clock; clock gating (duty < 1) runs it for
    // a share of the step only.
    double x_eff = 1.0;
    for (int gi : s.gpus) x_eff = std::min(x_eff, gpus_[gi].fw.x_eff);
    const ClockDuty cd = clock_duty(*gpus_[s.gpus[0]].preset, x_eff);
    st.run_s = t0 - s.start_s;  // trace time (clock gating runs the job for less of the step)
    Load load = advance_job(s, st, dt * cd.duty, cd.x);
    load.u *= cd.duty;
    load.m *= cd.duty;
    for (int gi : s.gpus) {
      Gpu& g = gpus_[gi];
      g.last = load;
      g.last.u *= g.work_share;
      g.last.m *= g.work_share;
    }
  }
  const bool energy_tick = (steps_ + 1) % energy_every_ == 0;
  for (Gpu& g : gpus_) {
    const GpuPreset& p = *g.preset;
    const bool ctx = g.job >= 0 && jobs_[g.job].started;
    if (ctx && g.pipe_power_w >= 0) {
      g.p_inst = std::max(p.idle_bare_w, g.pipe_power_w);
    } else if (ctx) {
      double extra_w = g.offset_w;
      if (g.noise_sd_w > 0) {
        g.noise_w = g.noise_rho * g.noise_w +
                    std::sqrt(1.0 - g.noise_rho * g.noise_rho) * g.noise.normal(0.0, g.noise_sd_w);
        extra_w += g.noise_w;
      }
      g.p_inst =
          std::max(p.idle_bare_w, gpu_power_w(p, g.last, clock_duty(p, g.fw.x_eff).x) + extra_w);
      firmware_step(p, fw_params_, fw_coeffs_, g.fw, g.last, g.cap_w, g.offset_w);
    } else {
      g.p_inst = p.idle_bare_w;
    }
    g.energy_j += g.p_inst * dt;
    if (energy_tick) g.energy_reported_j = g.energy_j;
    g.ring_sum += g.p_inst - g.ring[g.ring_pos];
    g.ring[g.ring_pos] = g.p_inst;
    if (++g.ring_pos == n_ring_) g.ring_pos = 0;
    g.temp_c += a_temp_ * (sim_.ambient_c + sim_.thermal_c_per_w * g.p_inst - g.temp_c);
  }
  ++steps_;
}

Status Cluster::read(double now_s, Snapshot& out) {
  if (!(now_s >= 0)) return Status::InvalidArgument("read: time must be >= 0");
  while (static_cast<double>(steps_ + 1) * sim_.dt_s <= now_s + 1e-9) step();
  out.time_s = now_s;
  out.gpus.resize(gpus_.size());
  for (size_t i = 0; i < gpus_.size(); ++i) {
    Gpu& g = gpus_[i];
    const GpuPreset& p = *g.preset;
    const bool ctx = g.job >= 0 && jobs_[g.job].started;
    GpuReading& r = out.gpus[i];
    r.gpu = static_cast<int>(i);
    const double noise = sim_.noise_w > 0 ? g.noise.normal(0.0, sim_.noise_w) : 0.0;
    r.power_instant_w = g.p_inst + noise;
    r.power_w = p.power_avg_1s ? g.ring_sum / n_ring_ + noise : r.power_instant_w;
    r.energy_j = g.energy_reported_j;
    r.cap_w = g.cap_w;
    r.sm_util = ctx ? std::min(1.0, g.last.u) : 0.0;
    const double x = clock_duty(p, g.fw.x_eff).x;
    r.mem_util = ctx ? std::min(1.0, g.last.m * clock_speed(g.last.c, x)) : 0.0;
    r.sm_clock_mhz = ctx ? x * p.sm_clock_max_mhz : p.sm_clock_idle_mhz;
    r.temp_c = g.temp_c;
  }
  out.jobs.resize(jobs_.size());
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const WorkloadState& st = jobs_[j];
    JobReading& r = out.jobs[j];
    r.job = static_cast<int>(j);
    r.phase = st.started ? st.phase : Phase::kIdle;
    r.tokens_total = st.tokens_total;
    r.steps_total = st.steps_total;
    r.knobs = kNoKnobs;
    for (int q = 0; q < kNumKnobs; ++q) {
      if (responds_to_knob(specs_[j].kind, q)) r.knobs[q] = st.knobs[q];
    }
  }
  return Status::Ok();
}

Status Cluster::write(const Command& cmd) {
  if (cmd.sets_gpu_settings()) {
    return Status::NotSupported(
        "write: power smoothing and fill settings: a node cluster has neither (only the site "
        "simulator models them); nothing applied");
  }
  if (cmd.power_cap_w.size() > gpus_.size()) {
    return Status::InvalidArgument("write: " + std::to_string(cmd.power_cap_w.size()) +
                                   " caps for " + std::to_string(gpus_.size()) + " GPUs");
  }
  if (cmd.knobs.size() > jobs_.size()) {
    return Status::InvalidArgument("write: knobs for " + std::to_string(cmd.knobs.size()) +
                                   " jobs, plant has " + std::to_string(jobs_.size()));
  }
  for (size_t i = 0; i < cmd.power_cap_w.size(); ++i) {
    const double c = cmd.power_cap_w[i];
    if (std::isnan(c)) continue;
    Gpu& g = gpus_[i];
    g.cap_w = std::clamp(c, g.preset->min_cap_w, g.preset->max_cap_w);
  }
  for (size_t j = 0; j < cmd.knobs.size(); ++j) {
    const JobSpec& s = specs_[j];
    WorkloadState& st = jobs_[j];
    for (int q = 0; q < kNumKnobs; ++q) {  // a knob the job does not respond to: ignored
      const double v = cmd.knobs[j][q];
      if (std::isnan(v) || !responds_to_knob(s.kind, q)) continue;
      const double c = std::clamp(v, s.knob_min[q], s.knob_max[q]);
      st.knobs[q] = kActuatorTable[q].keys.integer ? static_cast<double>(std::lround(c)) : c;
    }
  }
  return Status::Ok();
}

}  // namespace fw::sim

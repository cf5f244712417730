#include "sim/cluster.hpp"

#include <algorithm>
#include <cmath>

namespace fw::sim {

KnobRange knob_range(const JobSpec& s, int q) {
  if (s.kind != JobKind::kGrpo) return {};
  if (q == static_cast<int>(Knob::kGenConcurrency)) {
    return {true, s.gen_concurrency_min, s.gen_concurrency_max, 1};
  }
  if (q == static_cast<int>(Knob::kGroupSize)) return {true, s.group_size_min, s.group_size_max, 1};
  return {};
}

Cluster::Cluster(const SimParams& sim, std::vector<GpuSpec> gpus, std::vector<JobSpec> jobs,
                 uint64_t seed)
    : sim_(sim), specs_(std::move(jobs)) {
  n_ring_ = std::clamp(static_cast<int>(std::lround(1.0 / sim_.dt_s)), 1, 64);
  energy_every_ = std::max(1, static_cast<int>(std::lround(0.1 / sim_.dt_s)));
  a_sense_ = 1.0 - std::exp(-sim_.dt_s / sim_.fw_sense_tau_s);
  a_clock_ = 1.0 - std::exp(-sim_.dt_s / sim_.clock_tau_s);
  a_temp_ = 1.0 - std::exp(-sim_.dt_s / sim_.thermal_tau_s);
  const Rng noise_root = Rng::stream(seed, "sim.noise");
  const Rng job_root = Rng::stream(seed, "sim.jobs");
  gpus_.resize(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    Gpu& g = gpus_[i];
    g.preset = gpus[i].preset;
    g.cap_w = std::clamp(gpus[i].power_cap_w, g.preset->min_cap_w, g.preset->max_cap_w);
    g.temp_c = sim_.ambient_c + sim_.thermal_c_per_w * g.preset->idle_bare_w;
    g.p_inst = g.preset->idle_bare_w;
    g.ring.fill(g.p_inst);
    g.ring_sum = g.p_inst * n_ring_;
    g.noise = noise_root.child(i);
    info_.gpus.push_back({std::string(g.preset->name), g.preset->min_cap_w, g.preset->max_cap_w,
                          g.preset->tdp_w, g.preset->tdp_w});
  }
  jobs_.resize(specs_.size());
  for (size_t j = 0; j < specs_.size(); ++j) {
    const JobSpec& s = specs_[j];
    JobState& st = jobs_[j];
    st.rng = job_root.child(j);
    for (int gi : s.gpus) gpus_[gi].job = static_cast<int>(j);
    JobInfo ji;
    ji.name = s.name;
    ji.kind = s.kind == JobKind::kGrpo ? "grpo" : "pretrain";
    ji.gpus = s.gpus;
    if (s.kind == JobKind::kGrpo) {
      for (int q = 0; q < kNumKnobs; ++q) ji.knob_ranges[q] = knob_range(s, q);
      ji.default_knobs[static_cast<int>(Knob::kGenConcurrency)] = s.grpo.gen_concurrency;
      ji.default_knobs[static_cast<int>(Knob::kGroupSize)] = s.grpo.group_size;
      st.gen_concurrency = s.grpo.gen_concurrency;
      st.group_size_next = s.grpo.group_size;
      st.group_size = s.grpo.group_size;
    }
    info_.jobs.push_back(std::move(ji));
  }
}

void Cluster::step() {
  const double t0 = time_s();
  const double dt = sim_.dt_s;
  for (size_t j = 0; j < specs_.size(); ++j) {
    const JobSpec& s = specs_[j];
    JobState& st = jobs_[j];
    if (!st.started) {
      if (t0 + 1e-9 < s.start_s) continue;
      start_job(s, st, sim_.dt_s);
    }
    double x = 1.0;
    for (int gi : s.gpus) x = std::min(x, gpus_[gi].x);
    const Load load = advance_job(s, st, dt, x);
    for (int gi : s.gpus) gpus_[gi].last = load;
  }
  const bool energy_tick = (steps_ + 1) % energy_every_ == 0;
  for (Gpu& g : gpus_) {
    const GpuPreset& p = *g.preset;
    const bool ctx = g.job >= 0 && jobs_[g.job].started;
    if (ctx) {
      g.p_inst = gpu_power_w(p, g.last, g.x);
      g.filt.u += a_sense_ * (g.last.u - g.filt.u);
      g.filt.m += a_sense_ * (g.last.m - g.filt.m);
      g.filt.c += a_sense_ * (g.last.c - g.filt.c);
      g.x_target = clock_for_cap(p, g.filt, g.cap_w, g.x_target);
      g.x += a_clock_ * (g.x_target - g.x);
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
    r.power_limit_w = g.cap_w;
    r.sm_util = ctx ? std::min(1.0, g.last.u) : 0.0;
    r.mem_util = ctx ? std::min(1.0, g.last.m * clock_speed(g.last.c, g.x)) : 0.0;
    r.sm_clock_mhz = ctx ? g.x * p.sm_clock_max_mhz : p.sm_clock_idle_mhz;
    r.temp_c = g.temp_c;
  }
  out.jobs.resize(jobs_.size());
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const JobState& st = jobs_[j];
    JobReading& r = out.jobs[j];
    r.job = static_cast<int>(j);
    r.phase = st.started ? st.phase : Phase::kIdle;
    r.tokens_total = st.tokens_total;
    r.steps_total = st.steps_total;
    r.knobs = kNoKnobs;
    if (specs_[j].kind == JobKind::kGrpo) {
      r.knobs[static_cast<int>(Knob::kGenConcurrency)] = st.gen_concurrency;
      r.knobs[static_cast<int>(Knob::kGroupSize)] = st.group_size_next;
    }
  }
  return Status::Ok();
}

Status Cluster::write(const Command& cmd) {
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
    if (s.kind != JobKind::kGrpo) continue;  // pretraining exposes no knobs: ignored
    JobState& st = jobs_[j];
    const double gc = cmd.knobs[j][static_cast<int>(Knob::kGenConcurrency)];
    if (!std::isnan(gc)) {
      st.gen_concurrency = static_cast<int>(
          std::lround(std::clamp(gc, s.gen_concurrency_min, s.gen_concurrency_max)));
    }
    const double gs = cmd.knobs[j][static_cast<int>(Knob::kGroupSize)];
    if (!std::isnan(gs)) {
      st.group_size_next =
          static_cast<int>(std::lround(std::clamp(gs, s.group_size_min, s.group_size_max)));
    }
  }
  return Status::Ok();
}

}  // namespace fw::sim

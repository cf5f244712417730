#include "sim/site_plant.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace fw::sim {

SitePlant::SitePlant(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed)
    : sim_(spec, m, seed), sm_clock_max_mhz_(spec.gpu->sm_clock_max_mhz) {
  const GpuPreset& g = *spec.gpu;
  const int rows = spec.representatives;
  info_.gpus.resize(static_cast<size_t>(rows));
  for (GpuInfo& gi : info_.gpus) {
    gi.model = spec.gpu_model;
    gi.min_cap_w = g.min_cap_w;
    gi.max_cap_w = g.max_cap_w;
    gi.default_cap_w = g.default_cap_w;
    gi.tdp_w = g.tdp_w;
  }
  JobInfo job;
  job.name = spec.job.workload;
  job.kind = "pretrain";
  for (int i = 0; i < rows; ++i) job.gpus.push_back(i);
  info_.jobs.push_back(job);
  last_energy_j_.assign(static_cast<size_t>(rows), 0.0);
}

Status SitePlant::read(double now_s, Snapshot& out) {
  if (!(now_s >= last_read_s_ - 1e-9)) return Status::InvalidArgument("read: time went backwards");
  sim_.advance_to(now_s);
  const double span = sim_.time_s() - last_read_s_;
  out.time_s = now_s;
  out.gpus.resize(info_.gpus.size());
  for (size_t i = 0; i < out.gpus.size(); ++i) {
    const SiteRankReading r = sim_.reading(static_cast<int>(i));
    GpuReading& g = out.gpus[i];
    g.gpu = static_cast<int>(i);
    g.power_w = span > 1e-12 ? (r.energy_j - last_energy_j_[i]) / span : r.power_w;
    g.power_instant_w = r.power_w;
    g.energy_j = r.energy_j;
    g.cap_w = r.cap_w;
    g.sm_util = std::min(1.0, r.load.u);
    g.mem_util = std::min(1.0, r.load.m);
    g.sm_clock_mhz = r.clock_ratio * sm_clock_max_mhz_;
    g.temp_c = kUnset;
    last_energy_j_[i] = r.energy_j;
  }
  last_read_s_ = sim_.time_s();
  out.jobs.resize(1);
  JobReading& j = out.jobs[0];
  j.job = 0;
  j.phase = sim_.reading(0).phase;
  j.tokens_total = sim_.tokens();
  j.steps_total = static_cast<double>(sim_.iterations());
  j.knobs = kNoKnobs;
  // The job's announcements (what its client knows ahead of the meter).
  const SiteSpec& sp = sim_.spec();
  const double t = sim_.time_s();
  j.starts_in_s = t < sp.job.start_s ? sp.job.start_s - t : kUnset;
  j.ends_in_s = t < sim_.train_end_s() ? sim_.train_end_s() - t : kUnset;
  const int64_t to_ckpt = sim_.iterations_to_checkpoint();
  j.checkpoint_in_iters =
      to_ckpt > 0 && t < sim_.train_end_s() ? static_cast<double>(to_ckpt) : kUnset;
  j.checkpoint_s = to_ckpt > 0 ? sp.job.checkpoint_s : kUnset;
  return Status::Ok();
}

Status SitePlant::write(const Command& cmd) {
  if (cmd.power_cap_w.size() > info_.gpus.size()) {
    return Status::InvalidArgument("write: " + std::to_string(cmd.power_cap_w.size()) +
                                   " caps for " + std::to_string(info_.gpus.size()) + " rows");
  }
  if (cmd.gpu_settings.size() > info_.gpus.size()) {
    return Status::InvalidArgument("write: " + std::to_string(cmd.gpu_settings.size()) +
                                   " GPU settings for " + std::to_string(info_.gpus.size()) +
                                   " rows");
  }
  // Refuse a smoothing write on a site without smoothing before changing anything.
  const SiteSpec& sp = sim_.spec();
  for (const GpuSettingValues& v : cmd.gpu_settings) {
    for (int k = 0; k < kNumGpuSettings; ++k) {
      if (std::isnan(v[k])) continue;
      if (!(v[k] >= 0)) {
        return Status::InvalidArgument("write: " + std::string(kGpuSettingTable[k].name) +
                                       " must be >= 0");
      }
      if (k != static_cast<int>(GpuSetting::kFill) && sp.smoothing == nullptr) {
        return Status::NotSupported("write: " + std::string(kGpuSettingTable[k].name) +
                                    ": GPU model " + sp.gpu_model + " has no power smoothing");
      }
    }
  }
  for (size_t i = 0; i < cmd.power_cap_w.size(); ++i) {
    if (!std::isnan(cmd.power_cap_w[i])) sim_.set_cap_w(static_cast<int>(i), cmd.power_cap_w[i]);
  }
  for (size_t i = 0; i < cmd.gpu_settings.size(); ++i) {
    const GpuSettingValues& v = cmd.gpu_settings[i];
    const int rank = static_cast<int>(i);
    auto set = [&v](GpuSetting k) { return !std::isnan(v[static_cast<int>(k)]); };
    auto at = [&v](GpuSetting k) { return v[static_cast<int>(k)]; };
    if (set(GpuSetting::kSmoothingFloor) || set(GpuSetting::kSmoothingRampUp) ||
        set(GpuSetting::kSmoothingRampDown) || set(GpuSetting::kSmoothingHysteresis)) {
      SmoothingSettings s = sim_.smoothing(rank);
      if (!s.enabled) s = SmoothingSettings{.enabled = true};
      if (set(GpuSetting::kSmoothingFloor)) {
        const double f = at(GpuSetting::kSmoothingFloor) / 100.0;
        s.floor_frac =
            f > 0 ? std::clamp(f, sp.smoothing->floor_frac_min, sp.smoothing->floor_frac_max) : 0.0;
      }
      // A rate of 0 would stop the envelope: taken as the smallest rate, 1 W/s.
      if (set(GpuSetting::kSmoothingRampUp))
        s.ramp_up_w_per_s = std::max(1.0, at(GpuSetting::kSmoothingRampUp));
      if (set(GpuSetting::kSmoothingRampDown))
        s.ramp_down_w_per_s = std::max(1.0, at(GpuSetting::kSmoothingRampDown));
      if (set(GpuSetting::kSmoothingHysteresis)) {
        const double h = at(GpuSetting::kSmoothingHysteresis);
        s.ramp_down_hysteresis_ms = std::isfinite(h) ? h : 0.0;
      }
      sim_.set_smoothing(rank, s);
    }
    if (set(GpuSetting::kFill)) {
      const double w = at(GpuSetting::kFill);
      FillSettings f;
      f.enabled = w > 0;
      f.before_start = true;  // a written fill also runs before the start (the agent's)
      f.target_frac = std::isfinite(w) ? std::clamp(w / sp.gpu->tdp_w, 0.0, 1.0) : 1.0;
      sim_.set_fill(rank, f);
    }
  }
  return Status::Ok();
}

SiteRun SitePlant::finish() {
  sim_.advance_to(std::numeric_limits<double>::infinity());
  return sim_.finish();
}

}  // namespace fw::sim

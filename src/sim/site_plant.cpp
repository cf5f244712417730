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
  return Status::Ok();
}

Status SitePlant::write(const Command& cmd) {
  if (cmd.power_cap_w.size() > info_.gpus.size()) {
    return Status::InvalidArgument("write: " + std::to_string(cmd.power_cap_w.size()) +
                                   " caps for " + std::to_string(info_.gpus.size()) + " rows");
  }
  for (size_t i = 0; i < cmd.power_cap_w.size(); ++i) {
    if (!std::isnan(cmd.power_cap_w[i])) sim_.set_cap_w(static_cast<int>(i), cmd.power_cap_w[i]);
  }
  return Status::Ok();
}

SiteRun SitePlant::finish() {
  sim_.advance_to(std::numeric_limits<double>::infinity());
  return sim_.finish();
}

}  // namespace fw::sim

#include "fleet_sim/curve_node.hpp"

#include <algorithm>
#include <cmath>

namespace fw::fleet {
namespace {

// The node's one-job, one-node event: the job as the replay has it (curve, noise and dips in
// force), on `gpus` GPUs, its 1-minute noise scaled by sqrt(job_nodes) so that job_nodes
// independent nodes give the job its noise_frac_1min; sampled at the tick.
std::shared_ptr<const studies::DrEvent> node_event(const studies::DrEvent& ev, int job, int gpus,
                                                   int job_nodes, double tick_s, uint64_t seed) {
  auto e = std::make_shared<studies::DrEvent>();
  e->sample_period_s = tick_s;
  e->gpus_per_node = gpus;
  e->cap_lag_s = ev.cap_lag_s;
  e->noise_tau_s = ev.noise_tau_s;
  e->resume_s = ev.resume_s;
  e->noise = ev.noise;
  e->seed = seed;
  studies::DrJobSpec j = ev.jobs.at(static_cast<size_t>(job));
  j.gpus = gpus;
  j.noise_frac_1min *= std::sqrt(static_cast<double>(std::max(1, job_nodes)));
  e->jobs.push_back(std::move(j));
  return e;
}

}  // namespace

CurveGpus::CurveGpus(const studies::DrEvent& ev, int job, int gpus, int job_nodes, double tick_s,
                     uint64_t seed)
    : ev_(node_event(ev, job, gpus, job_nodes, tick_s, seed)),
      capped_(*ev_),
      free_(*ev_),
      gpus_(gpus),
      tick_s_(tick_s) {
  power_w_ = uncontrolled_w_ = capped_.read().node_power_w.at(0);
}

void CurveGpus::advance(double t_s, double cap_w, bool pause) {
  studies::DrCommand cmd;
  cmd.node_cap_w = {cap_w};
  cmd.job_pause = {pause};
  for (; t_s_ + tick_s_ <= t_s + 1e-9; t_s_ += tick_s_) {
    capped_.write(cmd, t_s_ + offset_s_);
    const double now = t_s_ + tick_s_ + offset_s_;
    capped_.step(now);
    free_.step(now);
    const auto& r = capped_.read();
    power_w_ = r.node_power_w.at(0);
    uncontrolled_w_ = free_.read().node_power_w.at(0);
    tokens_ += r.job_t_rel.at(0) * tick_s_ * gpus_;
    tokens_free_ += free_.read().job_t_rel.at(0) * tick_s_ * gpus_;
  }
}

}  // namespace fw::fleet

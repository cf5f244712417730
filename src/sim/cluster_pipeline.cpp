// sim::Cluster's pipeline jobs (cluster.hpp, sim/pipeline_job.hpp). Simulated.
//
// Per integration step of a started pipeline job:
// 1. Each of its GPUs' caps settles: pipe_cap += (cap − pipe_cap) · (1 − e^(−dt/τ)), τ =
//    clock_tau_s when lowering, clock_up_tau_s when raising (the SM clock lags of
//    gpu_model.hpp, applied to the cap the pipeline physics sees; assumption).
// 2. When a settled cap moved by more than 0.01 W since the last evaluation, or the set of
//    stragglers in force changed, the iteration is evaluated again (pipeline_iteration at t0).
// 3. Progress advances by dt / iteration time; each whole iteration adds one step and
//    tokens_per_iter tokens. Each GPU draws its stage's iteration-average power; its sensors
//    show the stage's clock and, as SM activity, its busy share (the share of time a kernel
//    runs: NVML's utilization).

#include <algorithm>
#include <cmath>

#include "sim/cluster.hpp"

namespace fw::sim {

const PipelineIteration* Cluster::pipeline_state(int j) const {
  if (j < 0 || static_cast<size_t>(j) >= specs_.size()) return nullptr;
  if (specs_[j].kind != JobKind::kPipeline || !pipes_[j].evaluated) return nullptr;
  return &pipes_[j].iter;
}

void Cluster::step_pipeline(size_t j, double t0) {
  const JobSpec& s = specs_[j];
  WorkloadState& st = jobs_[j];
  PipeState& ps = pipes_[j];
  const double dt = sim_.dt_s;
  if (!st.started) {
    if (t0 + 1e-9 < s.start_s) return;
    st.started = true;
    st.phase = Phase::kForward;
  }
  const PipelineJobSpec& spec = s.pipeline;
  const size_t n = s.gpus.size();
  bool dirty = !ps.evaluated;
  ps.caps_w.resize(n, 0.0);
  std::vector<double> caps(n);
  for (size_t k = 0; k < n; ++k) {
    Gpu& g = gpus_[s.gpus[k]];
    const double tau = g.cap_w < g.pipe_cap_w ? sim_.clock_tau_s : sim_.clock_up_tau_s;
    g.pipe_cap_w += (g.cap_w - g.pipe_cap_w) * (1 - std::exp(-dt / tau));
    caps[k] = g.pipe_cap_w;
    if (std::abs(caps[k] - ps.caps_w[k]) > 0.01) dirty = true;
  }
  uint64_t on = 0;
  for (size_t k = 0; k < spec.stragglers.size() && k < 64; ++k) {
    const PipelineStraggler& x = spec.stragglers[k];
    if (t0 >= x.start_s && t0 < x.end_s) on |= uint64_t{1} << k;
  }
  if (on != ps.stragglers_on) dirty = true;
  if (dirty) {
    auto it = pipeline_iteration(spec, caps, t0);
    if (it.ok()) {  // the spec was checked when the scenario was parsed
      ps.iter = std::move(it).value();
      ps.caps_w = caps;
      ps.stragglers_on = on;
      ps.evaluated = true;
    }
  }
  if (!ps.evaluated || !(ps.iter.time_s > 0)) return;
  ps.progress += dt / ps.iter.time_s;
  while (ps.progress >= 1) {
    ps.progress -= 1;
    st.steps_total += 1;
    st.tokens_total += s.pipeline_tokens_per_iter;
  }
  st.run_s = t0 - s.start_s;
  const Load& base = spec.load;
  for (size_t k = 0; k < n; ++k) {
    Gpu& g = gpus_[s.gpus[k]];
    const size_t stage = k % spec.stages.size();
    const Load& load = spec.stage_loads.empty() ? base : spec.stage_loads[stage];
    const double busy = ps.iter.busy_share[k];
    g.pipe_power_w = ps.iter.gpu_power_w[k];
    g.fw.x_eff = ps.iter.clock_x[k];
    g.fw.x_target = g.fw.x_eff;
    g.last = {busy, load.m * busy, load.c};  // SM activity: the share of time it computes
  }
}

}  // namespace fw::sim

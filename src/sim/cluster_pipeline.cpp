// sim::Cluster's pipeline jobs (cluster.hpp, sim/pipeline_job.hpp). Simulated.
//
// Per integration step [t0, t0 + dt) of a started pipeline job:
// 1. Each of its GPUs' caps settles: pipe_cap += (cap − pipe_cap) · (1 − e^(−dt/τ)), τ =
//    clock_tau_s when lowering, clock_up_tau_s when raising (the SM clock lags of
//    gpu_model.hpp, applied to the cap the pipeline physics sees; assumption).
// 2. When a settled cap moved by more than 0.01 W since the last evaluation, or the set of
//    stragglers in force changed, the caps' clocks and powers are evaluated again
//    (pipeline_iteration at t0: per GPU its op time multiplier and compute power, with the
//    busy shares of an iteration held at these caps where the cap bounds the iteration-average
//    power).
// 3. The job's ops run in the step (sim::PipelineRun, phase-resolved): an op that starts in
//    the step runs at the clock in force at t0; each iteration that ends adds one step and
//    tokens_per_iter tokens. Each GPU draws its compute power for the time it computes in the
//    step and blocking_w for the rest; its sensors show the stage's clock and, as SM activity,
//    its busy share over an iteration at the caps in force (the share of time a kernel runs,
//    as the job's per-rank compute timings give it; a per-step reading would alias with the
//    iteration). Each rank's 1F1B phase and the start of the current step are kept
//    (pipeline_run(): what the framework's schedule and step hooks report).

#include <algorithm>
#include <cmath>

#include "sim/cluster.hpp"

namespace fw::sim {

const PipelineRun* Cluster::pipeline_run(int j) const {
  if (j < 0 || static_cast<size_t>(j) >= specs_.size()) return nullptr;
  if (specs_[j].kind != JobKind::kPipeline) return nullptr;
  return &pipes_[j].run;
}

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
  if (!ps.run.started()) ps.run = PipelineRun(spec);
  ps.energy_j.assign(n, 0.0);
  ps.busy_s.assign(n, 0.0);
  const int done =
      ps.run.advance(t0, dt, ps.iter.op_slow, ps.iter.compute_w, ps.energy_j, ps.busy_s);
  st.steps_total += done;
  st.tokens_total += done * s.pipeline_tokens_per_iter;
  st.run_s = t0 - s.start_s;
  const Load& base = spec.load;
  for (size_t k = 0; k < n; ++k) {
    Gpu& g = gpus_[s.gpus[k]];
    const size_t stage = k % spec.stages.size();
    const Load& load = spec.stage_loads.empty() ? base : spec.stage_loads[stage];
    const double busy = ps.iter.busy_share[k];
    g.pipe_power_w = ps.energy_j[k] / dt;
    g.fw.x_eff = ps.iter.clock_x[k];
    g.fw.x_target = g.fw.x_eff;
    g.last = {busy, load.m * busy, load.c};  // SM activity: the share of time it computes
  }
}

}  // namespace fw::sim

#pragma once
// fleet: splits one fleet budget across jobs and holds each job to its share by moving its
// gen_concurrency ("staggered + job control" of docs/sources.md §1a, with a fleet-level split
// in the spirit of the research's proposed minute-scale fleet layer over job-level control).
//
// Every period_s:
//   1. Fleet budget F: the budget's watts for scope node|fleet; for scope job each job is
//      its own fleet of one (share = target·watts); for scope gpu, target·watts·(job's GPUs).
//   2. Demand d_j = trailing mean power of job j's GPUs over measure_s; cap_j = d_j·(1 + grow).
//   3. Split (node|fleet): a job the knob
//   cannot move now (not generating, or without the
//      knob) keeps what it draws, s_j = d_j. The rest, R = max(0, target·F − Σ those d_j), is
//      split among the generating jobs by water-filling, split_budget_w(R, w, cap), with
//      weights w_j (the job's nameplate, or its demand d_j): s_j = min(cap_j, λ·w_j), Σ s = R;
//      when every job fits (Σ cap ≤ R) the rest is handed out by weight. So jobs in a
//      low-power phase (sync) lend headroom, and jobs in a heavy one (update) take it.
//   4. Per job exposing gen_concurrency: relative error e = clamp((s_j − d_j)/s_j, −1, 1);
//      velocity-form PI in log space, ln c ← ln c + ki·e + kp·(e − e_prev), c clamped to the
//      knob's range and rounded. The integrator only moves while the job is generating (the
//      knob has no authority over score/update/sync: anti-windup; c holds there).
//      c starts from the setting read at the first decision (the range's top when unread).
//   5. Power caps (caps on; the second actuator, for phases gen_concurrency cannot reach).
//      Per group (node|fleet: all jobs; job|gpu scope: each job alone, its share the target),
//      fleet excess E = Σ d_j − T (T = target·F; d_j over measure_s). Velocity-form PI on the
//      total cap change: ΔC = −(cap_ki·E + cap_kp·(E − E_prev)), W.
//      ΔC < 0 (over): split among the jobs drawing above their fair share f_j = T·w_j/Σw
//      (nameplate weights), in proportion to the overshoot d_j − f_j; a job's per-GPU cap
//      starts from min(its cap, its per-GPU demand) and is cut by its part / its GPUs.
//      ΔC > 0 (under): split among capped jobs by GPU count, per-GPU cap raised toward the
//      device default. Caps stay in [min_cap_w, default_cap_w] of each GPU; a job back at
//      its default is released (NaN afterwards).
// Jobs without the knob (pretraining) are left alone by step 4; their demand still takes its
// share and step 5 may cap them. Other knobs unchanged (NaN). Deterministic; no randomness.

#include <string>
#include <vector>

#include "control/controller.hpp"

namespace fw {

struct FleetControllerConfig {
  double period_s = 5;
  double measure_s = 5;  // trailing span of each job's demand, s (>= one sample)
  double target = 0.95;  // fraction of the fleet budget the shares add up to, (0, 1]
  double grow = 0.10;    // a job's share may exceed its demand by this fraction
  enum class Weight { kNameplate, kDemand } weight = Weight::kNameplate;
  double ki = 1.5;      // per unit of relative error, per decision (log-concurrency)
  double kp = 1.0;      // per unit change of relative error (log-concurrency)
  bool caps = true;     // step 5: power caps as a second actuator
  double cap_ki = 0.1;  // W of total cap change per W of fleet excess, per decision
  double cap_kp = 0.5;  // W of total cap change per W change of fleet excess
};

// Water-filling split of total_w: s_j = min(cap_w[j], λ·weights[j]) with Σ s_j = total_w when
// Σ cap_w ≥ total_w; otherwise s_j = cap_w[j] + (total_w − Σ cap_w)·weights[j]/Σ weights.
// Weights ≤ 0 everywhere: equal weights. REQUIRES: sizes equal, total_w ≥ 0, caps ≥ 0.
std::vector<double> split_budget_w(double total_w, const std::vector<double>& weights,
                                   const std::vector<double>& cap_w);

class FleetController : public Controller {
 public:
  explicit FleetController(FleetControllerConfig cfg = {}) : cfg_(cfg) {}
  std::string name() const override { return "fleet"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override {
    ActuatorSet s = only_actuator(static_cast<int>(Knob::kGenConcurrency));
    if (cfg_.caps) s.set(kCapActuator);
    return s;
  }

  // Inspection (tests, traces): the shares and demands of the last decision, W per job.
  const std::vector<double>& shares_w() const { return shares_w_; }
  const std::vector<double>& demands_w() const { return demands_w_; }
  // Per-GPU caps this controller holds (NaN: not capped), W per plant GPU.
  const std::vector<double>& caps_w() const { return gpu_cap_w_; }

 private:
  struct JobState {
    bool started = false;
    double log_c = 0;
    double last_error = 0;
  };
  void update_caps(const PlantInfo& info, const std::vector<size_t>& group, double target_w,
                   double& last_excess_w);
  FleetControllerConfig cfg_;
  std::vector<JobState> state_;
  std::vector<double> shares_w_, demands_w_, weights_, caps_w_;
  std::vector<size_t> idx_;  // controllable jobs of the last split
  std::vector<double> gpu_cap_w_;
  std::vector<double> last_excess_w_;  // per group (one for node|fleet, one per job otherwise)
};

}  // namespace fw

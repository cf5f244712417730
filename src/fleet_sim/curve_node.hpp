#pragma once
// CurveGpus: the GPUs of one fleet-sim node on the replay's plant (`fleet-sim --node-plant
// replay`): the node draws its job's measured cap curve with the job's field-calibrated noise
// and dips, exactly as `flexwatt dr replay`'s plant draws it (studies/dr_plant.hpp: the same
// model, run for one node), so that fleet-sim and the replay are judged on one plant.
// Everything it reports is simulated.
//
// Contract:
//  - built from the replay's event (its jobs' curves, noise and dips in force, cap_lag_s,
//    noise_tau_s, resume_s), the node's job (an index into ev.jobs), the node's GPUs, the job's
//    node count in the run, the tick and the node's seed: the node's noise has the sd that gives
//    the job's 1-minute mean the job's noise_frac_1min with the job's nodes independent (the
//    replay's rule); the job's dips are the job's (every node of a job dips together);
//  - set_run_offset(s): the node's time 0 is run time s (dips fall on the run's clock);
//  - advance(t_s, cap_w, pause): from the last time to t_s in steps of the tick at per-GPU cap
//    cap_w (clamped to the curve's range) and the pause in force; a paused job draws 0 W and
//    makes no progress; a resumed one makes none for resume_s at half its draw (the replay's);
//  - power_w(): the node's draw after the last step (W, its GPUs summed); uncontrolled_w():
//    its uncapped twin's (same noise, never capped or paused);
//  - tokens() / tokens_free(): the node's progress in uncapped GPU-seconds (t_rel × tick ×
//    GPUs summed) and its twin's: their ratio is the node's relative throughput;
//  - curve(): the job's per-GPU cap curve (cap ascending).
// Deterministic for a seed; copyable.

#include <cstdint>
#include <memory>
#include <vector>

#include "studies/dr_event.hpp"
#include "studies/dr_plant.hpp"

namespace fw::fleet {

class CurveGpus {
 public:
  CurveGpus(const studies::DrEvent& ev, int job, int gpus, int job_nodes, double tick_s,
            uint64_t seed);

  void set_run_offset(double s) { offset_s_ = s; }
  void advance(double t_s, double cap_w, bool pause);

  int gpus() const { return gpus_; }
  const studies::DrJobSpec& job() const { return ev_->jobs.front(); }
  const std::vector<studies::DrCapPoint>& curve() const { return job().curve; }
  double power_w() const { return power_w_; }
  double uncontrolled_w() const { return uncontrolled_w_; }
  double tokens() const { return tokens_; }
  double tokens_free() const { return tokens_free_; }

 private:
  std::shared_ptr<const studies::DrEvent> ev_;  // the node's one-job event; the plants refer to it
  studies::DrReplayPlant capped_, free_;
  int gpus_ = 0;
  double tick_s_ = 0.25, t_s_ = 0, offset_s_ = 0;
  double power_w_ = 0, uncontrolled_w_ = 0, tokens_ = 0, tokens_free_ = 0;
};

}  // namespace fw::fleet

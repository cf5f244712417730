#pragma once
// The replay's plant (simulated): the event's jobs on nodes of gpus_per_node GPUs, each node
// drawing its job's measured cap curve at its cap, with the job's measured noise and periodic
// dips; Plant-shaped (write a command, step virtual time, read), no clock, seeded.
//
// Model (each line an assumption docs/flexibility.md states):
//  - a node's per-GPU draw = min(cap, P(cap)·(1 + ε)·dip(t)), P the curve's realized power at
//    the cap, ε an AR(1) process (correlation time noise_tau_s) whose per-sample sd is set so
//    that the job's 1-minute mean has the sd noise_frac_1min (nodes independent, jobs
//    independent: the field data show no site-common component, scripts/fit_dr_noise.py);
//    noise_frac_1min and the dips are the ones in force (DrEvent::noise: field or quiet);
//  - the draw follows that level with a first-order lag cap_lag_s;
//  - dip(t) = dips.level during each dip of the job, else 1; dips do not change throughput (they
//    are the job's own checkpoint/eval phases, the same capped or not);
//  - a job's throughput / its uncapped throughput = the curve's t_rel at its slowest node's cap
//    (data-parallel nodes wait for each other); 0 while paused or resuming;
//  - with plant_error_frac e, each job's draw is P(cap)·(1 + u_j), u_j uniform in [−e, e] (seeded),
//    still at most the cap: the curves the loop uses are off by u_j;
//  - a paused job draws 0 W (the field data's paused jobs read 0 W); a resumed job makes no
//    progress for resume_s and draws half its level meanwhile.

#include <vector>

#include "core/rng.hpp"
#include "studies/dr_event.hpp"

namespace fw::studies {

struct DrNode {
  int job = 0;
  int gpus = 0;
};

struct DrCommand {
  std::vector<double> node_cap_w;  // per node, per GPU
  std::vector<bool> job_pause;     // per job
};

struct DrReadings {
  double time_s = 0;
  std::vector<double> node_power_w;  // per node (W, the node's GPUs summed)
  std::vector<double> job_t_rel;     // per job, this sample's throughput / uncapped
  std::vector<bool> job_paused;      // paused or resuming
};

class DrReplayPlant {
 public:
  explicit DrReplayPlant(const DrEvent& ev);
  const std::vector<DrNode>& nodes() const { return nodes_; }
  // Applies a command (caps clamped to each job's curve range).
  void write(const DrCommand& cmd, double now_s);
  // Advances the plant to now_s (one sample period after the last step).
  void step(double now_s);
  const DrReadings& read() const { return r_; }

 private:
  const DrEvent& ev_;
  std::vector<DrNode> nodes_;
  std::vector<double> cap_w_, noise_, sigma_, job_error_;
  std::vector<bool> paused_;
  std::vector<double> resume_until_s_;
  Rng rng_;
  double rho_ = 0;
  DrReadings r_;
};

// True when job j is in one of its dips at time t.
bool dr_in_dip(const DrJobSpec& j, double t_s);

}  // namespace fw::studies

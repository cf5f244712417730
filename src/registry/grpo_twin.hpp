#pragma once
// The mpc planner's twin of a GRPO run (controllers/mpc_controller.hpp's MpcTwin).
//
// What it starts from: the run's declared scenario — the configuration an operator writes
// before the run (GPUs, the job's model, prompts per step, prompt tokens, the completion
// lengths' declared median, sigma and clip, knob ranges, the simulator's calibrated constants)
// — WITHOUT what no one declares in advance: every completion_len_curve is removed (and
// curve_shift_s zeroed), so the twin never sees the drift the plant will follow.
// What it learns: each GRPO job's completion median, refitted from the snapshots it observed
// (sim::OnlineGrpoFit over the trailing fit window). Its plants are sim::make_plant() of that
// scenario, seeded by the caller (the planner's search seeds, never the plant's).
//
// Not thread-safe; one twin per episode.

#include <memory>
#include <vector>

#include "controllers/mpc_controller.hpp"
#include "sim/fit_online.hpp"
#include "sim/scenario.hpp"

namespace fw::registry {

// `declared` with its curves removed and each GRPO job's completion median set from
// `medians` (plant job order; a NaN or missing entry keeps the declared median), its jobs as
// present at now_s: a job running then (start_s <= now_s < end_s) runs from the twin's start
// and never leaves; any other (not arrived yet, or gone) never starts — the planner knows
// which jobs run now, not when the next one arrives or leaves.
sim::Scenario twin_scenario(const sim::Scenario& declared, const std::vector<double>& medians,
                            double now_s = 0);

class GrpoTwin : public MpcTwin {
 public:
  GrpoTwin(std::shared_ptr<const sim::Scenario> declared, sim::OnlineFitConfig cfg);
  void reset() override;
  void observe(const Snapshot& s) override;
  Result<Fit> refit(double now_s) override;

 private:
  std::shared_ptr<const sim::Scenario> declared_;
  sim::OnlineFitConfig cfg_;
  std::vector<sim::DeclaredGrpoJob> jobs_;
  std::unique_ptr<sim::OnlineGrpoFit> fit_;
};

}  // namespace fw::registry

#pragma once
// The fixed settings of the site simulator's power-stabilisation mitigations (issue #48;
// docs/stabilization.md has each cost model and its sources):
//
// - cap_frac: every GPU's power cap, a fraction of its TDP (clamped to the settable range).
//   Shaves compute peaks; throughput from the simulator's cap model (sim/gpu_model.hpp: the
//   firmware lowers the SM clock, phases slow by s(c, x)).
// - smoothing: GPU power smoothing (sim/site_smoothing.hpp), only on a GPU model that has it.
//   Energy cost: the power burned above the natural draw; the ramp-up limit slows the work.
// - fill: a secondary workload that tops each GPU up to target_frac × TDP while the training
//   job holds it (never above the cap). Energy cost: its power. Throughput cost: the training
//   work runs slower by SiteFillCost::slowdown (while the fill is enabled, or only while it
//   draws power: SiteFillCost::while_active).
// - stagger: the job's GPUs join over stagger_s before training starts and leave over stagger_s
//   after it stops, burning at the job's mean training power meanwhile (the fill workload as a
//   pre-/post-load). Costs: training starts stagger_s later (throughput) and the burn (energy).
// Value types; thread-compatible.

#include <string>

#include "sim/site_smoothing.hpp"

namespace fw::sim {

struct FillSettings {
  bool enabled = false;
  double target_frac = 0;  // of TDP, 0..1
  // Also before training starts, on the idle GPUs (the agent's pre-start fill): only a fill
  // written through sim::SitePlant (a controller's); the fixed fill arm fills while the job
  // trains only.
  bool before_start = false;
};

struct StaggerSettings {
  double stagger_s = 0;  // 0: every GPU starts and stops at once
};

struct SiteMitigations {
  double cap_frac = 1.0;  // of TDP; 1: the default cap
  SmoothingSettings smoothing;
  FillSettings fill;
  StaggerSettings stagger;

  bool any() const {
    return cap_frac < 1.0 || smoothing.enabled || fill.enabled || stagger.stagger_s > 0;
  }
};

// "cap 80% + smoothing floor 60% ... + fill 50% + stagger 20 s", or "none".
std::string describe(const SiteMitigations& m);

// What the simulator charges the fill workload (scenario block `fill_cost`).
struct SiteFillCost {
  // Training work rate × (1 − slowdown) while the fill runs: ~5 % training impact, the figure
  // arXiv 2508.14318 gives for a secondary workload (quoted in issue #48).
  double slowdown = 0.05;
  // false (default, the conservative reading): the slowdown applies whenever the fill is
  // enabled and the job trains; true: only in steps where the fill drew power on that GPU.
  bool while_active = false;
};

}  // namespace fw::sim

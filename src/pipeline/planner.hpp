#pragma once
// The pipeline energy planner (`flexwatt pipeline plan`): per-stage power caps that remove
// energy bloat from a 1F1B pipeline, from a stage profile (pipeline/stage_profile.hpp).
//
// Physics (everything here is computed from the profile; nothing is measured by the planner):
// - A cap allows a clock: on instruction k of stage s, the cap C runs the highest profiled
//   clock whose average power E/t on that instruction is at most C (the firmware lowers the
//   SM clock until the power fits). One cap therefore sets both the forward and the backward
//   clock of its stage. "uncapped" is every instruction at its highest profiled clock.
// - A stage's GPUs draw `blocking_w` each while they wait for a neighbour (point-to-point
//   blocking); the pipeline's energy over an iteration of length T is
//   tp · Σ_s [Σ_ops E(op) + blocking_w · (T − busy_s)].
// - Iteration time is the 1F1B critical path (pipeline/one_f_one_b.hpp).
//
// Two kinds of setting: `constant` (one cap per stage for the whole iteration) and
// `schedule` (per stage one cap for each segment of its 1F1B phases — fill (the first
// micro-batch's forward), warm-up, steady state, cool-down, drain (the last micro-batch's
// backward), or the three phases alone — switched at the micro-batch boundaries the job
// reports; the switch is assumed to take effect at once). The frontier is traced by a greedy
// descent from uncapped (each step lowers one setting by up to three cap levels: the step that
// saves most energy at no time cost, else the one with the most energy saved per second added), and
// the pick at a target time is the better of that frontier and a greedy descent that keeps the time
// within the target.
//
// Baseline (the Perseus artifact's): every GPU at its highest clock, same schedule, same
// blocking power. Straggler: one of the pipelines is `straggler_factor` times slower (time and
// energy; it runs the intrinsic plan); the others pick the frontier point with least energy at
// its time and block for the rest; the baseline runs every pipeline uncapped, the others
// blocking for the straggler.

#include <string>
#include <vector>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/stage_profile.hpp"

namespace fw::pipeline {

struct PlanOptions {
  int microbatches = 12;    // per pipeline per iteration
  int tp = 8;               // GPUs per stage (tensor parallel degree)
  int global_batch = 1536;  // micro-batches per iteration over all pipelines
  double slowdown_max = 0.012;
  double straggler_factor = 1;  // 1: no straggler
  double blocking_w = 0;        // per GPU while waiting; REQUIRES > 0 (default for a GPU:
                                // hw::GpuCatalogEntry::blocking_w, 0 where unknown)
  double min_cap_w = 0;         // the device's settable cap range (caps outside are not used;
  double max_cap_w = 1e9;       // uncapped is always allowed)
  // Schedule segments per stage: 5 = fill, warm-up, steady, cool-down, drain (one_f_one_b.hpp);
  // 3 = warm-up (fill included), steady, cool-down (drain included).
  int segments = 5;
};

// One stage's setting for one phase (or the whole iteration).
struct CapSetting {
  bool uncapped = true;
  double cap_w = 0;  // lowest cap that gives these clocks (when !uncapped)
  double forward_mhz = 0, backward_mhz = 0;
};

struct FrontierPoint {
  double time_s = 0;
  double energy_j = 0;  // one pipeline, tp GPUs per stage, over its own time
};

struct ModePlan {
  std::string mode;  // "constant" or "schedule"
  // per stage, per phase (constant: the three phases are equal)
  std::vector<std::array<CapSetting, kPhases>> stages;
  double pipeline_time_s = 0, pipeline_energy_j = 0;  // the intrinsic plan (≤ slowdown_max)
  double time_s = 0, energy_j = 0;  // iteration, all pipelines (straggler included)
  double energy_saved = 0;          // 1 − energy_j / baseline
  double time_increase = 0;         // time_s / baseline − 1
  // Straggler only: the other pipelines' setting and their own time.
  std::vector<std::array<CapSetting, kPhases>> others;
  double others_time_s = 0;
  std::vector<FrontierPoint> frontier;  // Pareto points, fastest first
};

struct Plan {
  int stages = 0, microbatches = 0, tp = 0, pipelines = 0;
  double blocking_w = 0, slowdown_max = 0, straggler_factor = 1;
  double baseline_pipeline_time_s = 0, baseline_pipeline_energy_j = 0;
  double baseline_time_s = 0, baseline_energy_j = 0;  // all pipelines, straggler included
  ModePlan constant, schedule;
  const ModePlan& best() const {
    return schedule.energy_j < constant.energy_j ? schedule : constant;
  }
  double planning_s = 0;      // wall clock
  double planning_cpu_s = 0;  // CPU time of this thread's process
};

// InvalidArgument for options out of range (microbatches < 1, tp < 1, global_batch not a
// multiple of microbatches, slowdown_max < 0, straggler_factor < 1, blocking_w <= 0).
Result<Plan> plan_pipeline(const StageProfile& profile, const PlanOptions& opt);

}  // namespace fw::pipeline

#pragma once
// The pipeline energy planner (`flexwatt pipeline plan`): per-stage power caps that remove
// energy bloat from a 1F1B pipeline, from a stage profile (pipeline/stage_profile.hpp).
//
// Physics (everything here is computed from the profile; nothing is measured by the planner):
// - A cap allows a clock: on instruction k of stage s, the cap C runs the highest profiled
//   clock whose average power E/t on that instruction is at most C (the firmware lowers the
//   SM clock until the power fits). One cap therefore sets both the forward and the backward
//   clock of its stage. "uncapped" (no cap written) is every instruction at the highest
//   profiled clock the GPU's maximum cap allows (Device range, below).
// - A stage's GPUs draw `blocking_w` each while they wait for a neighbour (point-to-point
//   blocking); the pipeline's energy over an iteration of length T is
//   tp · Σ_s [Σ_ops E(op) + blocking_w · (T − busy_s)].
// - Iteration time is the 1F1B critical path (pipeline/one_f_one_b.hpp).
//
// Device range. Caps are planned within the GPU's settable range [min_cap_w, max_cap_w]; a stage
// with no cap written runs at the GPU's default limit (its maximum): each instruction at the
// highest profiled clock whose power fits max_cap_w. So the baseline is what the GPU does
// uncapped. A profile measured above the range (the artifact's A100-SXM profile draws
// 460–482 W at 1410 MHz; an A100-SXM4-80GB's maximum is 400 W) therefore plans from a slower
// baseline, said in the output. allow_above_max: the profiled GPUs' own limit was higher (e.g.
// a 500 W HGX part): caps above max_cap_w are planned and the baseline is the profile's highest
// clock (the Perseus artifact's). cap_limit_w (`--max-cap-w`) only removes caps, never the
// baseline: a constraint, so it can never raise the saving.
//
// Settings: `constant` (one cap per stage for the whole run) and `schedule` (per stage, its
// 1F1B phases — fill (the first micro-batch's forward), warm-up, steady state, cool-down, drain
// (the last micro-batch's backward) — cut into segments, each holding one cap, switched at the
// micro-batch boundaries the job reports; pipeline/segments.hpp). A segment lasts at least
// min_segment_s, counted as its ops at the stage's fastest allowed clocks (a lower bound on the
// time its cap is in force): shorter segments are merged with a neighbour (in time order, across
// the iteration boundary too), never planned; `--segments 3` never cuts fill from warm-up nor
// cool-down from drain. The planner assumes a cap is in force from the switch on; the minimum
// segment length is what makes that assumption hold (kCapSettlingS).
//
// Search (pipeline/cap_search.hpp): branch and bound on the linear relaxation, exact when it
// ends within max_nodes nodes; else the relaxation's bound is reported beside the plan
// (`optimal`, `bound_energy_saved`). The intrinsic plan minimises the pipeline's energy over its
// own iteration time, within (1 + slowdown_max) × the baseline's. The frontier is the same
// search at a range of time limits (each point the least energy found within its limit).
//
// Baseline (the Perseus artifact's rule, with the device range above): every stage uncapped,
// same schedule, same blocking power. Straggler: one of the pipelines is `straggler_factor`
// times slower (time and energy; it runs the intrinsic plan); the others take the least
// energy, blocking included, within the straggler's iteration time; the baseline runs every
// pipeline uncapped, the others blocking for the straggler.

#include <limits>
#include <string>
#include <vector>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/stage_profile.hpp"

namespace fw::pipeline {

// The settling time of a written cap, measured in the simulator (an assumption until measured
// on hardware: the simulator's clock lags, 0.2 s down and 1.5 s up, are themselves assumptions,
// docs/simulator.md): after a cap step on a pipeline GPU (sim::Cluster) its clock stays within
// 2 % of the step from 0.9-1.0 s on when lowering and 1.3-2.2 s when raising (steps between
// 200-300 W and 400 W on an A100). A schedule both lowers and raises, so a segment shorter than
// the slower of the two cannot hold its cap. The default of `pipeline plan --min-segment-s`;
// method and figures: docs/caps.md ("Cap settling").
inline constexpr double kCapSettlingS = 2.2;

struct PlanOptions {
  int microbatches = 12;    // per pipeline per iteration
  int tp = 8;               // GPUs per stage (tensor parallel degree)
  int global_batch = 1536;  // micro-batches per iteration over all pipelines
  double slowdown_max = 0.012;
  double straggler_factor = 1;  // 1: no straggler
  double blocking_w = 0;        // per GPU while waiting; REQUIRES > 0 (default for a GPU:
                                // hw::GpuCatalogEntry::blocking_w, 0 where unknown)
  double min_cap_w = 0;         // the device's settable cap range (header comment)
  double max_cap_w = 1e9;
  bool allow_above_max = false;  // caps above max_cap_w, baseline at the profile's top clock
  double cap_limit_w = std::numeric_limits<double>::infinity();  // highest cap planned
  // Schedule segments: 5 = fill, warm-up, steady, cool-down, drain may each be one
  // (one_f_one_b.hpp); 3 = fill stays with warm-up, drain with cool-down.
  int segments = 5;
  double min_segment_s = 0;  // shortest schedule segment (header comment); 0: any
  int max_nodes = 24;        // branch-and-bound nodes per search (0: no relaxation, no bound)
  int frontier_points = 6;   // time limits the frontier is searched at (besides the picks)
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

// One segment of a stage's schedule: the phases it covers (bit p: Phase p), its setting, and
// its ops' time at the planned clocks (busy time; the time the cap is in force is at least this).
// start_s: when its first op starts, seconds from the iteration's start on the 1F1B timeline at
// the planned clocks (the pipeline's critical path; a segment that wraps the iteration boundary,
// drain then the next fill: when its cool-down or drain starts). A follower of the schedule holds
// a segment's cap from its start to the next segment's (cyclic): through the waits between them.
struct PlanSegment {
  int phases = 0;
  CapSetting set;
  double busy_s = 0;
  double start_s = 0;
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
  // The intrinsic plan's segments per stage (constant: one each), and the shortest segment
  // that switches (busy time at the planned clocks; 0 when no stage switches).
  std::vector<std::vector<PlanSegment>> segments;
  double shortest_segment_s = 0;
  // Proven: no plan of this mode (same options) saves more than bound_energy_saved; optimal
  // when every search ended within its node budget (the plan is then the least energy, to
  // 1e-7 relative).
  double bound_energy_saved = 0;
  bool optimal = false;
  int search_nodes = 0;
};

struct Plan {
  int stages = 0, microbatches = 0, tp = 0, pipelines = 0;
  double blocking_w = 0, slowdown_max = 0, straggler_factor = 1;
  double min_cap_w = 0, max_cap_w = 0, cap_limit_w = 0;  // as PlanOptions
  bool allow_above_max = false;
  double min_segment_s = 0;
  int segments = 5;
  // The baseline's clocks per stage (forward, backward MHz), whether they are the profile's
  // highest, and the profile's largest power at its highest clock.
  std::vector<std::array<double, 2>> baseline_mhz;
  bool baseline_at_top_clock = true;
  double profile_top_power_w = 0;
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
// multiple of microbatches, slowdown_max < 0, straggler_factor < 1, blocking_w <= 0,
// min_segment_s < 0, max_nodes < 0) and for a stage none of whose clocks fits max_cap_w.
Result<Plan> plan_pipeline(const StageProfile& profile, const PlanOptions& opt);

}  // namespace fw::pipeline

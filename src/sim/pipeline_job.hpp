#pragma once
// sim::pipeline_iteration: one iteration of a pipeline-parallel (1F1B) training job with
// data-parallel pipelines, under per-GPU power caps. Everything it reports is simulated.
//
// Physics:
// - A stage's GPU runs its compute at the clock its cap allows on its own load: the firmware
//   setpoint is cap · (1 − margin_frac) and the clock is clock_for_cap() of the GPU model
//   (gpu_model.hpp) on the job's Load; uncapped when P(f_max) fits. Its power while computing
//   is gpu_power_w() at that clock; an op's time at f_max scales by 1 / s(c, x).
// - Iteration time of a pipeline is the 1F1B critical path (pipeline/one_f_one_b.hpp) of its
//   ops; a GPU that waits for a neighbour draws blocking_w.
// - The dp pipelines meet at the gradient all-reduce: the iteration ends when the slowest
//   pipeline does, and every GPU of a faster pipeline blocks (at blocking_w) until then. The
//   all-reduce itself takes no time (assumption).
// - A straggler multiplies one pipeline's op times by `factor` while start_s <= now < end_s
//   (a throttled or slow node: its GPUs draw the same power for longer); with stage >= 0 only
//   that stage of the pipeline (one slow GPU).
// - Energy: tp GPUs per stage, each Σ ops P·t + blocking_w · (T − busy).

#include <span>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/gpu_model.hpp"

namespace fw::sim {

struct PipelineStageWork {
  double forward_s = 0;   // one micro-batch's forward at f_max
  double backward_s = 0;  // and its backward
};

struct PipelineStraggler {
  int pipeline = 0;
  double factor = 1;  // op times × factor
  double start_s = 0, end_s = 1e300;
  int stage = -1;  // -1: every stage of the pipeline
};

// A cap response measured on the job itself (sim/pipeline_fit.hpp: from runs at one power
// limit for every GPU): a stage whose GPU computes under cap P works at speed(P) of its rate at
// the highest measured cap and draws min(P · (1 − margin_frac), uncapped_w) while computing
// (the cap binds the power while computing: no averaging with the waits; docs/simulator.md).
// speed is piecewise linear in P between the measured caps, 1 at and above the last one, and
// extrapolated linearly from the lowest two below the first (at low clocks power is close to
// affine in the clock), never below 0.05.
struct CapResponse {
  std::vector<double> cap_w;  // increasing
  std::vector<double> speed;  // at each cap, in (0, 1], non-decreasing, the last one 1
  double uncapped_w = 0;      // power while computing where the cap does not bind
  bool empty() const { return cap_w.empty(); }
  double speed_at(double cap_w) const;
  double compute_w(double cap_w, double margin_frac) const;
};

struct PipelineJobSpec {
  const GpuPreset* gpu = nullptr;
  int microbatches = 1;  // per pipeline per iteration
  int dp = 1;            // data-parallel pipelines
  int tp = 1;            // GPUs per stage
  std::vector<PipelineStageWork> stages;
  Load load;                      // a stage's compute load (u, m, c), the same on every stage
  std::vector<Load> stage_loads;  // when not empty: one per stage, in place of `load`
  double blocking_w = 0;          // a waiting GPU
  double margin_frac = 0.015;     // firmware setpoint below the cap (docs/simulator.md)
  // true: the cap bounds a stage's power averaged over the iteration (compute and blocking);
  // false: it bounds the power while computing.
  bool average_over_iteration = true;
  std::vector<PipelineStraggler> stragglers;
  // When not empty, replaces the GPU model's clock for a cap (the load is then unused) and
  // average_over_iteration; clock_x in the result is then the speed.
  CapResponse cap_response;
};

struct PipelineIteration {
  double time_s = 0;                    // slowest pipeline
  double energy_j = 0;                  // every GPU of every pipeline
  std::vector<double> pipeline_time_s;  // per pipeline, its own critical path
  std::vector<double> clock_x;          // per pipeline and stage (p * stages + s)
  // Per pipeline and stage (p * stages + s), one GPU of the stage: its power averaged over the
  // iteration (compute and blocking) and the share of the iteration it computes.
  std::vector<double> gpu_power_w, busy_share;
};

// REQUIRES: caps_w.size() == dp · stages (one cap per stage of each pipeline; the tp GPUs of
// a stage share it). InvalidArgument for a spec that is not runnable.
Result<PipelineIteration> pipeline_iteration(const PipelineJobSpec& spec,
                                             std::span<const double> caps_w, double now_s = 0);

}  // namespace fw::sim

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
#include "pipeline/one_f_one_b.hpp"
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
  // Per pipeline and stage: the power while computing at the cap, and the op time multiplier
  // at its clock (1 / speed; stragglers not included), for PipelineRun.
  std::vector<double> compute_w, op_slow;
};

// REQUIRES: caps_w.size() == dp · stages (one cap per stage of each pipeline; the tp GPUs of
// a stage share it). InvalidArgument for a spec that is not runnable.
Result<PipelineIteration> pipeline_iteration(const PipelineJobSpec& spec,
                                             std::span<const double> caps_w, double now_s = 0);

// A rank's 1F1B phase as the job reports it (the framework's schedule loops: Megatron's
// warm-up, steady 1F1B and cool-down loops): the phase of the op the rank runs or waits for;
// fill is part of warm-up and drain of cool-down (pipeline/one_f_one_b.hpp's five segments
// merged to three). After its last op, until the iteration ends, a rank stays in cool-down.
enum class RankPhase { kWarmup = 0, kSteady = 1, kCooldown = 2 };
RankPhase rank_phase(pipeline::Phase p);

// Phase-resolved execution of a pipeline job's iterations in simulated time (sim::Cluster
// steps it; docs/simulator.md "Pipeline jobs in scenarios"). Each op of the 1F1B DAG of every
// pipeline starts when its predecessor on the stage and its dependency on the neighbour stage
// have ended; its duration is its work at f_max × the op time multiplier of its GPU in force
// when it starts (PipelineIteration::op_slow at the caps settled then) × the straggler factor
// in force at its start; while it runs the GPU draws the compute power in force at its start,
// and blocking_w while it waits. The next iteration starts when every pipeline's last op has
// ended (the all-reduce takes no time). At constant caps this is pipeline_iteration's
// iteration, op by op: same iteration time, same energy per iteration (tested).
class PipelineRun {
 public:
  PipelineRun() = default;
  explicit PipelineRun(const PipelineJobSpec& spec);

  // Runs [t0, t0 + dt): starts every op whose start falls before t0 + dt. slow and compute_w
  // are per pipeline and stage (PipelineIteration's op_slow, compute_w at the caps in force).
  // Adds each stage GPU's energy over the window (one GPU of the stage) to energy_j and its
  // time computing to busy_s (both per pipeline and stage); returns the iterations that ended
  // in the window (at or before t0 + dt).
  int advance(double t0, double dt, std::span<const double> slow, std::span<const double> compute_w,
              std::span<double> energy_j, std::span<double> busy_s);

  // When the current iteration started (the last step boundary), s.
  double iteration_start_s() const { return iter_start_s_; }
  // Rank k's (p · stages + s) phase at the end of the last window.
  RankPhase phase(size_t k) const;
  bool started() const { return started_; }

 private:
  struct Interval {
    double start, end, power_w;
  };
  void begin_iteration(double t);
  void schedule_ready(double until);  // starts the ready ops that begin before `until`

  int S_ = 0, M_ = 0, dp_ = 0;
  std::vector<PipelineStageWork> work_;
  std::vector<PipelineStraggler> stragglers_;
  double blocking_w_ = 0;
  pipeline::OneFOneB dag_{1, 1};
  std::vector<std::vector<int>> stage_ops_;  // per stage, its ops (indices into dag_.ops())
  std::vector<RankPhase> op_phase_;          // per op
  bool started_ = false;
  double iter_start_s_ = 0;
  std::vector<double> end_;   // per pipeline × op: end time, NaN before it starts
  std::vector<size_t> next_;  // per pipeline × stage: its next op (index into stage_ops_)
  std::vector<std::vector<Interval>> pending_;  // per rank: ops started, not yet accounted
  std::vector<size_t> pending_head_;
  std::vector<double> rate_slow_, rate_w_;  // the rates for the ops started in this window
  int unscheduled_ = 0;                     // ops of this iteration not yet started
  double iter_end_s_ = 0;                   // max end of the started ops
  double now_s_ = 0;                        // end of the last window
};

}  // namespace fw::sim

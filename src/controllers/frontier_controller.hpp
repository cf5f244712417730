#pragma once
// FrontierController (`frontier` in `flexwatt eval` / `flexwatt caps`): the reference that
// applies `flexwatt pipeline plan`'s result (pipeline/planner.hpp) to one pipeline job as
// per-GPU caps, through the SafetyLimiter like every controller. It needs an offline profile
// of the job's stages (a Perseus-format file, or the simulated job profiled at every clock:
// sim/pipeline_profile.hpp); it reads nothing else about the job but what a node sees: step
// counts, per-GPU power, energy counter and SM clock (never SM utilization: NVML counts a rank
// blocked in a NCCL call as busy).
//
// Plan: the planner's constant mode (one cap per stage) at ≤ slowdown_max, or with `schedule`
// its schedule mode in three segments (one cap per stage for each 1F1B phase: warm-up, steady,
// cool-down; planner.hpp `segments` 3). A stage setting's clocks become a cap: with
// `average_over_iteration` (the simulator's default) the stage's iteration-average power at
// those clocks (compute power for its planned busy share of the iteration, blocking_w for the
// rest), else its compute power; divided by (1 − margin_frac), the firmware's setpoint margin.
// Uncapped: the device's max.
//
// Schedule mode, keyed to the job's step boundaries: a controller sees the step count only
// (JobReading::steps_total, at the loop's sample period), so a step starts, as far as it
// knows, half a sample period before the first sample where the count grew; each stage's
// phases start at the plan's offsets from there (the planned 1F1B critical path: a rank
// enters a phase when it starts that phase's first op; the last stage has no warm-up and no
// cool-down, its ops done it waits). The cap in force from t is the highest of the planned
// phase caps over [t + lead_down_s, t + lead_up_s]: a lowering is written lead_down_s before
// its phase starts and a raise lead_up_s before (the simulator's cap settling: clock lags
// 0.2 s down and 1.5 s up, one time constant each; assumption, tested in
// tests/controllers/frontier_controller_test.cpp). Re-anchored at every step boundary.
//
// Schedule keyed to the job's step boundaries: caps are written only on the first sample
// where the job's step count has grown since the decision (never mid-step).
// Cap settling time (assumption, tested in tests/controllers/frontier_controller_test.cpp):
// a written cap is in force within settle_s (default 8 s; the simulator settles with the
// clock lags, 0.2 s down and 1.5 s up, so 99 % in ≤ 7 s); step times measured before that are
// not used.
//
// Stragglers (dynamic), from each GPU's busy share (the share of time it computes) over a
// window: (P − blocking_w) / (P_c − blocking_w), P its mean power from the energy counter over
// the window (the mean of its power readings without a counter), P_c the profile's compute
// power of its stage at its mean SM clock (forward and backward, time-weighted, interpolated
// between the profile's clocks). Every measure_s after the caps settled, each pipeline's busy
// shares are compared, stage by stage, with the mean of the other pipelines'. A pipeline whose
// ratio r exceeds 1 + threshold waits least: it is the straggler. Its factor F is the step time
// over the reference step time (measured under the base plan while no pipeline straggled), or,
// with no reference yet, F_current · r. The plan is redone with straggler_factor F and the other
// pipelines get its `others` caps (the straggler keeps the base plan's). Release, checked at
// every step boundary on the last three whole steps (a stale straggler plan slows every
// pipeline to the straggler's pace, a loss; a late onset only saves less): when the
// straggler's own busy share over them (from boundary sample to boundary sample) falls below
// (1 − threshold) of its busy share over its first three whole steps under the straggler plan
// (recovered, it computes its work in 1/F of the time), the base plan returns. Claims the cap
// actuator; never reads the budget.

#include <array>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/stage_profile.hpp"

namespace fw {

struct FrontierConfig {
  pipeline::StageProfile profile;  // one pipeline's stages
  int job = 0;                     // the plant's job index
  int microbatches = 12;           // per pipeline per iteration
  int dp = 1;                      // pipelines; the job's GPUs are gpus[p · stages + s]
  double blocking_w = 0;           // REQUIRES > 0
  double slowdown_max = 0.012;
  double margin_frac = 0.015;
  bool average_over_iteration = true;
  double settle_s = 8;
  double measure_s = 30;
  double threshold = 0.03;
  double period_s = 0.5;
  bool schedule = false;     // the planner's schedule mode (three phases), else constant
  double lead_up_s = 1.5;    // schedule: a raise is written this long before its phase
  double lead_down_s = 0.2;  // schedule: a lowering this long before
};

// A schedule's timetable for one pipeline: per stage, its cap in each 1F1B phase (warm-up,
// steady, cool-down) and when its steady and cool-down phases start in the planned iteration.
struct PhaseTable {
  std::vector<std::array<double, 3>> caps_w;
  std::vector<double> steady_s, cool_s;
  double time_s = 0;  // the planned iteration (the table repeats with it)
  // The highest cap of stage s over the phases that meet [a, b] (times from an iteration's
  // start, wrapped with time_s · scale; scale stretches the offsets for a straggler).
  double max_cap_over(size_t s, double a, double b, double scale = 1) const;
};

class FrontierController : public Controller {
 public:
  // Plans once (InvalidArgument for a profile or options the planner refuses).
  static Result<FrontierController> create(const FrontierConfig& cfg);

  std::string name() const override { return "frontier"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }

  // Per stage: the base plan's caps (before the device's range is applied).
  const std::vector<double>& base_caps_w() const { return base_caps_w_; }
  const pipeline::Plan& base_plan() const { return base_; }
  double straggler_factor() const { return factor_; }  // 1: none in force
  int straggler_pipeline() const { return straggler_; }
  int replans() const { return replans_; }
  int releases() const { return quick_releases_; }  // straggler plans released

  // Schedule mode: the base plan's timetable (empty in constant mode), and the current step's
  // start as the controller sees it (-1 before the job's first busy sample).
  const PhaseTable& base_table() const { return base_table_; }
  double step_start_s() const { return step_start_s_; }
  // The timetable of setting `m` (a schedule) over an iteration of time_s (the plan's).
  static PhaseTable table_for(
      const FrontierConfig& cfg,
      const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& m, double time_s,
      double max_cap_w);

  // The caps (per stage) that give setting `m`'s clocks over an iteration of time_s (constant
  // mode: phase slot 0; `phase` picks another slot of a schedule).
  static std::vector<double> caps_for(
      const FrontierConfig& cfg,
      const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& m, double time_s,
      double max_cap_w, int phase = 0);

 private:
  explicit FrontierController(FrontierConfig cfg) : cfg_(std::move(cfg)) {}
  // A measuring window's start: each job GPU's energy counter, and its sums of power and SM
  // clock readings (the power sum where there is no counter).
  struct BusyWindow {
    double t0_s = 0;
    std::vector<double> e0_j, power_sum_w, clock_sum_mhz;
    int n = 0;        // samples added
    bool on = false;  // started
    void start(const Snapshot& snap, const std::vector<int>& gpus);
    void add(const Snapshot& snap, const std::vector<int>& gpus);
  };
  void want(int straggler, const std::vector<double>& other_caps);
  Command write_schedule(const Observation& obs);
  // A stage's compute power at an SM clock, from the profile (fwd and bwd, time-weighted).
  double compute_w_at(size_t stage, double mhz) const;
  // Each job GPU's busy share over window `w` up to `snap` (see the header's Stragglers).
  void busy_over(const BusyWindow& w, const Snapshot& snap, std::vector<double>& out) const;

  FrontierConfig cfg_;
  pipeline::Plan base_;
  std::vector<double> base_caps_w_;
  std::vector<int> gpus_;  // the job's GPUs
  double max_cap_w_ = 1e9;
  size_t n_gpus_ = 0;
  std::vector<double> wanted_;  // per plant GPU, the caps to write at the next boundary
  bool pending_ = false;
  double last_steps_ = -1;
  double settled_at_s_ = 0;  // readings from here on are under the written caps
  BusyWindow window_;        // since settled_at_s_
  static constexpr int kReleaseSteps = 3;
  // Started at the last kReleaseSteps step boundaries after settling (round robin).
  std::array<BusyWindow, kReleaseSteps> step_windows_;
  int step_boundaries_ = 0;    // step boundaries seen since settling
  std::vector<double> busy_;   // per job GPU, the last busy shares computed
  double strag_ref_act_ = -1;  // the straggler's busy share over its first such steps, planned
  int quick_releases_ = 0;
  double first_boundary_t_ = -1, first_boundary_steps_ = 0;  // step boundaries measured
  double last_boundary_t_ = 0, last_boundary_steps_ = 0;
  double ref_step_s_ = 0;  // step time under the base plan, no straggler (0: not measured)
  double factor_ = 1;
  int straggler_ = -1;
  int replans_ = 0;
  // Schedule mode.
  PhaseTable base_table_, other_table_;
  double step_start_s_ = -1;     // the current step's start, as seen (-1: none yet)
  std::vector<double> written_;  // per job GPU, the cap last written (NaN: none)
  bool table_in_force_ = false;  // the schedule is written (after the first boundary)
};

}  // namespace fw

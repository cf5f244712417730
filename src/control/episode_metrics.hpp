#pragma once
// Episode metrics, accumulated tick by tick (constant memory): tokens, energy, tokens per
// MWh, and the budget violation rate at several measurement windows.
//
// Tokens: Σ over jobs of the growth of JobReading.tokens_total from the first to the last
// snapshot. Energy: Σ over GPUs of the growth of the energy counter, or, when any GPU has
// no counter, Σ power_w·dt over the samples before the last. Violations: each budget unit's
// power divided by the budget in force at that sample (so schedules work), fed to one
// fw::WindowAccumulator per unit and window against a budget of 1; the rate is violations
// over windows pooled across units. Windows are tumbling, aligned to the first sample, judged
// by analysis/windows.hpp's time-weighted accumulator (any window length; the one `analyze`
// uses on traces). The sliding rate is control/window_judge.hpp's kSliding rule at the
// budget's window (the rule of the PPO reward and the oracle).

#include <cstdint>
#include <vector>

#include "analysis/steps_violating.hpp"
#include "analysis/windows.hpp"
#include "control/budget_units.hpp"
#include "control/decision_cost.hpp"
#include "control/plant.hpp"
#include "control/safety_limiter.hpp"
#include "control/window_judge.hpp"
#include "vocab/budget.hpp"

namespace fw {

inline const std::vector<double> kDefaultWindowsS = {0.5, 30, 300};
inline constexpr double kNodeWindowS = 30;

struct EpisodeResult {
  double duration_s = 0;
  double tokens = 0;
  double energy_j = 0;
  double tokens_per_mwh = 0;
  double mean_power_w = 0;                 // all GPUs, mean over samples
  std::vector<double> windows_s;           // as given
  std::vector<double> violation_rate;      // per window, 0..1
  std::vector<double> worst_window_ratio;  // per window: largest window mean / budget
  std::vector<int64_t> windows_judged;     // per window: windows pooled across units
  // Sliding-window check at the budget's own window: the share of (unit, sample) pairs,
  // once a full window of samples exists, at which the trailing window mean exceeded the
  // budget. Tumbling windows can be gamed by timing heavy phases across their boundaries;
  // this cannot.
  double sliding_violation_rate = 0;
  double worst_sliding_ratio = 0;  // largest trailing budget-window mean / budget
  // Means of the summed power of all GPUs over tumbling kNodeWindowS windows, for
  // peak-demand and oversubscription figures (analysis/oversubscription.hpp).
  std::vector<double> node_window_means_w;
  // Tumbling windows at the budget's own window, at kWindowOffsets evenly spaced phases
  // (window k starts k·n/kWindowOffsets samples after the first sample; offset 0 is the
  // aligned rate's phase): the mean over the offsets of each offset's violation rate. A real
  // meter's windows are not aligned with the run's start; this is the headline rate.
  double offset_violation_rate = 0;
  std::vector<double> offset_violation_rates;  // per offset
  // Progress: per job, the tokens and steps of completed steps only (the step in progress at
  // the last sample is left out; tokens counted up to the sample at which a step's counter
  // moved on), summed over jobs.
  double completed_tokens = 0;
  double completed_steps = 0;
  // Steps violating (analysis/steps_violating.hpp) at the budget's window, each job judged on
  // its budget units (a step violates when any of them does), pooled over jobs.
  int64_t steps_judged = 0, steps_violating = 0;
  LimiterStats limiter;
  // Decision cost (ControlLoop::decision_wall_s/decisions, set by the episode's runner): wall
  // time inside the controllers' update() and the number of calls. A measurement of this
  // machine, not of the plant: never in a JSON that must be identical run to run.
  double decision_wall_s = 0;
  int64_t decisions = 0;
  DecisionCost decision_cost;  // each call's wall and thread CPU (ControlLoop::decision_cost)
};

inline constexpr int kWindowOffsets = 6;

class EpisodeMetrics {
 public:
  EpisodeMetrics(const PlantInfo& info, const BudgetSchedule& budget,
                 std::vector<double> windows_s = kDefaultWindowsS);
  // One sample held dt_s seconds. Times must not decrease.
  void add(const Snapshot& s, double dt_s);
  EpisodeResult finish(const LimiterStats& limiter = {}) const;

 private:
  // Completed steps and their tokens, and the step-violation counters (budget_w in force; <=
  // 0: counters not fed).
  void add_progress(const Snapshot& s, double budget_w);

  const BudgetSchedule& budget_;
  BudgetUnits units_;
  std::vector<double> windows_s_;
  std::vector<WindowAccumulator> acc_;  // [window][unit]
  WindowAccumulator node_acc_;          // all GPUs summed, kNodeWindowS, means kept
  // Sliding check: per unit, the trailing budget window of power/budget ratios.
  WindowJudge slide_;  // sized at the first judged sample
  int64_t slide_checks_ = 0, slide_over_ = 0;
  double slide_worst_ = 0;
  // Offset tumbling judges at the budget's window; offset k feeds samples from skip_[k] on.
  std::vector<WindowJudge> offset_;
  std::vector<size_t> skip_;
  std::vector<int64_t> offset_windows_, offset_over_;
  int64_t judged_samples_ = 0;
  // Progress and steps violating, per job (step counters: one per budget unit of the job).
  std::vector<double> first_steps_, done_steps_, done_tokens_;
  std::vector<std::vector<StepViolationCounter>> step_counters_;
  bool started_ = false;
  double first_t_ = 0, last_t_ = 0, last_dt_ = 0;
  std::vector<double> first_tokens_, last_tokens_, first_energy_, last_energy_;
  double integrated_j_ = 0, pending_j_ = 0, power_sum_w_ = 0;
  int64_t samples_ = 0;
  bool counters_ok_ = true;
};

}  // namespace fw

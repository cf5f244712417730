#pragma once
// `flexwatt dr replay EVENT.yaml`: a rehearsal of a demand-response event an operator can run
// before agreeing to it (docs/flexibility.md, "dr replay"). The event's jobs run on the replay
// plant (studies/dr_plant.hpp, simulated from their measured cap curves) under the closed
// site loop (studies/dr_fleet_loop.hpp: the coordinator's planning step, fleet/site_round.hpp)
// or uncapped; the result is scored against the target.
//
// Scores (all on the replay's simulated site power; B = baseline_w; tolerance = tolerance_frac·B):
//  - minutes_above_target: 1-minute means of power above the 1-minute mean of the target by more
//    than the tolerance, counted over the windows inside the event [first start, end_s +
//    release_ramp_s]; the mean over every window offset (one per sample period in [0, 60 s));
//    beside it the count on windows aligned with t = 0 and the sliding count (samples whose
//    trailing 60 s window is above, in minutes).
//  - mean_overcut_frac: mean over the holds of max(0, target − trailing 60 s mean power) / B.
//  - ramp_down_s: per step, the physical time to the target band: from the step's start until
//    the trailing 10 s mean power is at or below the step's hold target + tolerance and stays
//    there for 30 s, windows holding a job's dip not counted, the largest over steps; -1
//    when never. ramp_down_1min_s: the same for the trailing 60 s mean, settled for the rest of
//    the step (a dip that brings the mean down for a while does not count): the delay the
//    1-minute judging adds.
//  - max_ramp_down_w_per_s / max_ramp_up_w_per_s: the fastest fall / rise of the site's
//    1-minute mean, (m(t) − m(t − 60 s)) / 60 s with m the trailing 60 s mean, from the first
//    step's start to the end of the replay (the release may outlast the grid's), leaving out the
//    pairs of windows in which a job dips (its own checkpoints: not commanded). Beside them the
//    event's limits and the loop's commanded target's fastest moves (fleet/site_loop.hpp
//    "limits": the draw its model predicts at the split).
//  - holdable_target_w: before the event (its first sample), the deepest target the site holds
//    through it for sure (fleet/site_round.hpp "tiers" and split_plan.hpp site_holdable,
//    holdable_rule_w: every job at its hold tier's floor, at least its lowest cap's draw;
//    pausable jobs whose tier budget covers the event paused). A deeper target may still
//    hold, with pauses taking turns and jobs banking progress while others pause: shortfall_w
//    says whether this one did: the largest W by which the loop's holdable draw now (each
//    round, as the jobs' progress goes) stood above the target line from the first start to
//    end_s; ramp_shortfall_w: the largest W by which the ramp limit kept the loop's line above
//    the target line + tolerance over the same span (a step deeper than the limit reaches
//    within its ramp window); infeasible_s: the seconds either was > 0; feasible: both 0 (`flexwatt
//    dr replay` exits 1 when not). Per step, the same at the step's first sample and over its span.
//    The loop computes the shortfall under any
//    --method (with `uncapped` on the uncapped run's progress, beside it: the figures differ);
//    the ramp shortfall and the commanded ramps only under control; none for field actions.
//  - per job: performance = mean throughput over the whole replay / uncapped throughput over the
//    same span (the field demonstration's rule), hold_performance the same over the holds;
//    weighted_performance = Σ tier_min·performance / Σ tier_min.
//  - with a measured total (--measured-total): projected_vs_measured_rmse_frac = RMSE of the
//    replay's 1-minute means [t, t + 60 s) at each measured row's time against the row's value,
//    over the rows inside the replay, / the mean of those values.

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "studies/dr_event.hpp"
#include "studies/dr_loop.hpp"
#include "studies/dr_series.hpp"

namespace fw::studies {

struct DrReplayOptions {
  std::string method = "optimal";  // an allocation method, or "uncapped" (no control)
  DrLoopOptions loop;
  std::optional<DrSeries> measured_total;
  std::optional<DrSeries> field_projection;
  // The field's own actions (the plant-model check): per job of the event, in its order, the
  // job's measured power over time (e.g. its column of aps_job_power_w.csv). When given, the
  // loop is replaced by them: every sample each job's nodes are capped at the cap whose curve
  // power is the job's level then (zero-order hold of the rows) per GPU, and a job whose level
  // is under 5 % of its uncapped curve power per GPU is paused; the method reads
  // "field-actions". Compared with the measured total this checks the plant (curves, noise,
  // dips, lag), not a policy. Nothing is fitted to the total.
  std::vector<DrSeries> field_actions;
  // Called every 1000 samples and at the end with (samples done, samples in the event).
  std::function<void(size_t, size_t)> progress;
};

struct DrJobScore {
  std::string name;
  double performance = 0, hold_performance = 0, tier_min = 0;
  bool pausable = false;
  double paused_s = 0;
};

struct DrStepScore {
  double start_s = 0, depth = 0, target_w = 0, ramp_down_s = -1, ramp_down_1min_s = -1;
  // The least time the event's ramp limit allows to move from the previous level to this hold
  // (|Δdepth| · B / limit; 0 without a limit).
  double ramp_limit_s = 0;
  // The loop's holdable target at the step's first sample, and the largest shortfall during the
  // step's span (to the next step's start or end_s) (DrReplayResult).
  double holdable_target_w = 0, shortfall_w = 0, ramp_shortfall_w = 0;
};

struct DrSeriesScore {
  double rmse_frac = 0;        // RMSE / mean measured, every comparable row
  double event_rmse_frac = 0;  // rows in [first start, end_s + release_ramp_s]
  double mean_w = 0;
  int rows = 0;
};

// The scores of a site power series against the event's target (the replay's, or a measured
// total's).
struct DrPowerScore {
  double minutes_above_target = 0, minutes_above_target_aligned = 0,
         minutes_above_target_sliding = 0;
  double worst_minute_excess_frac = 0;  // largest (1-minute power − target) / B, any offset;
                                        // 0 when no window is above
  double mean_overcut_frac = 0;
  double hold_power_over_target = 0;  // mean power / mean target over the holds
  double ramp_down_s = -1, ramp_down_1min_s = -1;
  // Fastest fall and rise of the site's trailing 1-minute mean power (W/s; see above).
  double max_ramp_down_w_per_s = 0, max_ramp_up_w_per_s = 0;
  std::vector<DrStepScore> steps;
};

struct DrReplayResult : DrPowerScore {
  std::string event_path, method;
  uint64_t seed = 1;
  double sample_period_s = 0, duration_s = 0;
  double baseline_w = 0, tolerance_frac = 0;
  std::vector<DrJobScore> jobs;
  double weighted_performance = 0;
  bool all_jobs_at_tier = true;
  std::vector<DrPauseSpan> pauses;
  double final_sigma_w = 0, final_margin_w = 0;
  int infeasible_samples = 0;
  // The holdable target and shortfall (see above); holdable_computed false for field actions.
  bool holdable_computed = false;
  double holdable_target_w = 0, shortfall_w = 0, ramp_shortfall_w = 0, infeasible_s = 0;
  bool feasible = true;
  // The event's ramp limits (0: none) and the commanded target's fastest fall and rise (W/s).
  double ramp_down_limit_w_per_s = 0, ramp_up_limit_w_per_s = 0;
  double commanded_max_ramp_down_w_per_s = 0, commanded_max_ramp_up_w_per_s = 0;
  // The measured total scored by the same rules (baseline: its mean before the first step).
  std::optional<DrPowerScore> measured_score;
  double measured_baseline_w = 0;
  std::optional<DrSeriesScore> vs_measured;              // replay vs measured total
  std::optional<DrSeriesScore> field_vs_measured;        // field projection vs measured total
  std::optional<DrSeriesScore> field_vs_measured_point;  // the same, the projection's value at
                                                         // each row's time (not its minute mean)
  std::optional<DrSeriesScore> vs_field_projection;      // replay vs field projection
  // For the plot: 1-minute means (aligned) of power and target.
  std::vector<double> minute_s, minute_power_w, minute_target_w;
  std::optional<DrSeries> measured_total, field_projection;
};

Result<DrReplayResult> run_dr_replay(const DrEvent& ev, const DrReplayOptions& opt);

nlohmann::json dr_replay_json(const DrReplayResult& r);
std::string dr_replay_table(const DrReplayResult& r);
std::string dr_replay_svg(const DrReplayResult& r);

}  // namespace fw::studies

#pragma once
// The closed site loop of `flexwatt dr replay` (docs/flexibility.md, "dr replay"): every sample
// period, on measured power, it holds the site under the grid's target.
//
//  1. Setpoint: at each step's start the loop goes straight to the step's hold level (the target
//     line is a deadline, not a path), on release it follows the target line; never above the
//     line (a rising step's ramp is followed too).
//  2. Margin: the setpoint minus z · σ, σ the measured noise of the site on 1-minute means —
//     before the event the robust sd (1.4826 · MAD) of the uncapped site's 1-minute block means,
//     under control the same of the blocks' tracking error (site − planned shares), plus its
//     median when positive. Blocks start at a seeded offset (the loop never sees the scorer's
//     window phase: meter-blind).
//  3. Split: the margin-reduced setpoint is split across the running jobs by an allocation
//     method (allocation/allocation.hpp) on the jobs' curves, throughput weighted by
//     tier_min / Σ tier_min (what the field demonstration scored), with a floor per job from its
//     tier: the least hold performance that still leaves the job's whole-run performance at
//     tier_min + 0.005 given its progress so far (jobs report progress).
//  4. Node controllers under the split: feed-forward cap from the job's curve for the node's
//     share, plus an integral correction (gain ki_per_s) on the worse of the share's 30 s and
//     1-minute trailing-mean errors; the integral may not rise during a detected dip (10 s mean
//     below 80 % of the curve's prediction) or for 60 s after it: dips are not chased.
//  5. Pausing (pausable jobs only): when the floors of the running jobs exceed the setpoint, the
//     pausable job with the most tier budget left pauses; a paused job resumes when it fits
//     again, when the release begins, or when its budget runs out (its whole-run performance
//     would fall under tier_min); at most one pause or resume per stagger_s.
//  6. Ramp limits (the event's ramp_down_w_per_s / ramp_up_w_per_s, W/s; 0: none): the commanded
//     target — the split of step 3 plus the node integrals of step 4 over the running nodes
//     (commanded_w) — moves no faster than them. The split (setpoint − margin) is slew-limited
//     from where the site is at the event's start (the larger of the jobs' uncapped curve draw
//     and the site's trailing 60 s mean); the integrals' summed change is scaled into what the
//     split's own move leaves. The limit wins over the target line: a target that falls faster
//     than the limit is missed while the site ramps (the replay's scores count it). After the
//     grid's release the loop stays on, rising at ramp_up_w_per_s, until the split reaches the
//     jobs' uncapped draw and the node integrals have wound out to 0 (no jump back to uncapped
//     caps). A pause or resume changes the running set (and drops the paused nodes'
//     integrals) at once: a step the limits do not shape.
//  7. Holdable target (from the event's first step's start to end_s). holdable_rule_w: the
//     deepest site draw the loop holds from now to end_s without counting on pauses taking turns
//     or on jobs banking progress: every job at its hold floor of step 3 (the tier's, at least
//     the curve's lowest cap's draw; a job that runs at it keeps it), but 0 for a pausable job
//     that may stay paused until end_s within its tier budget (the pausing rule's budget: its
//     whole-run performance, paused until end_s and running fully after its resume_s, at least
//     tier_min + 0.01). holdable_w: the deepest it can hold now, the lesser of that and the
//     configuration in force (the running jobs' floors, paused jobs 0). shortfall_w = max(0,
//     holdable_w − the target line now): W the site cannot shed now without dropping a job
//     under its tier. ramp_shortfall_w = max(0, the split of step 6 − the target line −
//     tolerance): W the ramp limit keeps the site above the target now (a step deeper than the
//     limit reaches within its ramp window). Outside [first start, end_s): NaN, NaN, 0, 0.
// Deterministic given the event's seed; no clock.

#include <deque>
#include <limits>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/rng.hpp"
#include "studies/dr_event.hpp"
#include "studies/dr_loop.hpp"
#include "studies/dr_plant.hpp"

namespace fw::studies {

// Trailing mean over a fixed number of samples (running sum).
class DrTrailing {
 public:
  explicit DrTrailing(size_t n = 1) : n_(n) {}
  void push(double x);
  double mean() const { return q_.empty() ? 0 : sum_ / static_cast<double>(q_.size()); }
  bool full() const { return q_.size() >= n_; }

 private:
  size_t n_;
  std::deque<double> q_;
  double sum_ = 0;
};

class DrSiteLoop : public DrLoop {
 public:
  DrSiteLoop(const DrEvent& ev, const std::vector<DrNode>& nodes, DrLoopOptions o);
  DrCommand update(const DrReadings& r) override;

  double baseline_w() const { return baseline_w_; }
  double sigma_w() const override { return sigma_w_; }
  double margin_w() const override { return margin_w_; }
  double setpoint_w() const { return setpoint_w_; }
  double planned_w() const { return planned_w_; }
  const std::vector<DrPauseSpan>& pauses() const override { return pauses_; }
  int infeasible_samples() const override { return infeasible_; }
  // Step 6: the commanded target after the last update (W; NaN while the loop is off), and its
  // fastest fall and rise so far (W/s, sample to sample; the first move counts from where the
  // split starts, the hand-back to uncapped caps when the loop goes off counts too).
  double commanded_w() const { return commanded_w_; }
  double commanded_max_fall_w_per_s() const override { return commanded_fall_; }
  double commanded_max_rise_w_per_s() const override { return commanded_rise_; }
  // Step 7 after the last update: NaN / 0 outside [first start, end_s).
  double holdable_w() const { return holdable_w_; }
  double holdable_rule_w() const override { return holdable_rule_w_; }
  double shortfall_w() const override { return shortfall_w_; }
  double ramp_shortfall_w() const override { return ramp_shortfall_w_; }

 private:
  double hold_floor(int j, double t) const;
  // Job j's whole-run performance above tier_min + 0.01 if it stays paused until until_s and
  // runs fully after its resume (the pausing rule's budget; < 0: it cannot afford that).
  double pause_slack(int j, double until_s) const;
  void update_noise(double t, double site_w);
  void pausing(double t, double split_w, const std::vector<double>& floor_w);

  const DrEvent& ev_;
  std::vector<DrNode> nodes_;
  DrLoopOptions o_;
  std::vector<int> job_nodes_;
  std::vector<double> weight_;
  std::vector<double> progress_;  // Σ t_rel · dt per job
  // Node controllers.
  std::vector<DrTrailing> m10_, m30_, m60_, s30_, s60_, p10_;
  std::vector<double> integral_w_, share_w_, holdoff_until_s_, cap_w_;
  // Site.
  double baseline_sum_ = 0;
  int64_t baseline_n_ = 0;
  double baseline_w_ = 0;
  double sigma_w_ = 0, margin_w_ = 0, setpoint_w_ = 0, planned_w_ = 0;
  double block_offset_s_ = 0, block_start_s_ = -1;
  double block_site_ = 0, block_plan_ = 0;
  int block_n_ = 0;
  bool block_controlled_ = false;
  std::vector<double> pre_blocks_, err_blocks_;
  double cmd_w_ = -1;      // the slew-limited split (step 6); < 0 while the loop is off
  double uncapped_w_ = 0;  // every job's uncapped curve draw
  double commanded_w_ = std::numeric_limits<double>::quiet_NaN();
  double commanded_fall_ = 0, commanded_rise_ = 0;
  double integral_sum_w_ = 0;  // the running nodes' integrals after the last update
  double holdable_w_ = std::numeric_limits<double>::quiet_NaN(), shortfall_w_ = 0;
  double ramp_shortfall_w_ = 0;
  double holdable_rule_w_ = std::numeric_limits<double>::quiet_NaN();
  // Pausing.
  std::vector<bool> pause_;
  double last_action_s_ = -1e300;
  std::vector<DrPauseSpan> pauses_;
  int infeasible_ = 0;
};

}  // namespace fw::studies

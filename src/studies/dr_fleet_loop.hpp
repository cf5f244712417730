#pragma once
// DrFleetLoop: the site loop of `flexwatt dr replay`, the coordinator's on the replay's plant:
// each round it runs fleet::SiteRound (fleet/site_round.hpp, the code the coordinator runs) on
// node records made from the replay's nodes, as agents would publish them, and applies the
// assignments as the nodes would. There is no other site loop.
//
// Contract (deterministic, no clock):
//  - a round every round_period_s of replay time (the coordinator's track period while an event
//    binds), on the latest readings: each node's record has its GPUs, nameplate and floor (its
//    job's highest and lowest cap per GPU), draw (its power in the last sample), caps in force,
//    uncontrolled draw (its job's uncapped curve power), paused draw 0 (the plant's paused jobs
//    draw 0 W, dr_plant.hpp), its job (id = the job's name, tier_min, pausable), and the job's
//    draw and throughput curves at the node's budget (the cap curve per GPU × its GPUs: what
//    `fleet.draw_curve` publishes from a sweep);
//  - the grid target: a schedule of load targets of stair_s each from the first step's start:
//    until end_s each step's hold level (1 − depth) × B from the step's start (the step's ramp
//    window is a deadline, not a path: the site goes to the hold level at once, as fast as the
//    ramp limit lets it), then on the release the target line's lowest value within each stair;
//    B the site's measured mean power before the first step (or the event's baseline_w); with
//    a down limit the stairs descend from B at it (the limit wins over the step); every
//    target carries the event's limits as its ramp rates (ramp_w_per_s down, ramp_up_w_per_s
//    up, grid.hpp), which join the stairs into slopes and which the site loop applies to its
//    split; after the last stair the line rises to the site budget at the up limit;
//    the site budget is every node's nameplate plus the largest node floor (the joiner room
//    the coordinator keeps: the budget never binds);
//  - a node's command: equal per-GPU caps, its assignment / its GPUs clamped to the job's cap
//    range (fleet-sim's nodes do the same, fleet_sim/sim_node.hpp); a job is paused while the
//    plan pauses it;
//  - the allocator is "curves" (--method optimal) or curves-METHOD (fleet/allocator.hpp); the
//    loop's options are the coordinator's defaults (fleet::SiteLoopOptions) but z and ki_per_s
//    when DrLoopOptions gives them (dips chased: none is seen) with pausing at
//    DrLoopOptions::stagger_s; tiers are judged over the whole replay (SiteRoundOptions
//    tier_window [0, duration_s], resume_s the event's: the field demonstration's rule); the
//    joiner room is the largest node floor, as the coordinator leaves it;
//  - holdable_rule_w / shortfall_w: the round's holdable draw and shortfall against the
//    deepest target (split_plan.hpp site_holdable) between the first start and end_s;
//    ramp_shortfall_w: the W by which the schedule's line (its ramp limits in force) stands
//    above the event's target line beyond the tolerance; the commanded ramps are the site
//    loop's split's fastest moves; infeasible samples: rounds whose plan was below the live
//    floors.

#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fleet/allocator.hpp"
#include "fleet/site_round.hpp"
#include "studies/dr_event.hpp"
#include "studies/dr_loop.hpp"

namespace fw::studies {

struct DrFleetLoopOptions {
  double round_period_s = 1;  // fleet::SiteLoopOptions::period_s
  double stair_s = 5;
};

class DrFleetLoop {
 public:
  // InvalidArgument for a negative z or ki_per_s, or a round period or stair <= 0.
  static Result<std::unique_ptr<DrFleetLoop>> Make(const DrEvent& ev,
                                                   const std::vector<DrNode>& nodes,
                                                   const DrLoopOptions& lo,
                                                   DrFleetLoopOptions fo = {});

  // One sample period: the command (per-node caps, per-job pauses) on the plant's readings.
  DrCommand update(const DrReadings& r);
  // The site's noise the loop measured (W) and its margin (W) after the last update.
  double sigma_w() const { return round_->loop().sigma_w(); }
  double margin_w() const { return round_->loop().margin_w(); }
  const std::vector<DrPauseSpan>& pauses() const { return pauses_; }
  // Rounds whose plan was below the live floors.
  int infeasible_samples() const { return infeasible_; }
  // The commanded target's fastest fall and rise so far (W/s).
  double commanded_max_fall_w_per_s() const { return fall_w_per_s_; }
  double commanded_max_rise_w_per_s() const { return rise_w_per_s_; }
  // From the event's first start to end_s (NaN / 0 outside): the deepest site draw the loop
  // holds, the W it cannot shed now without a job under its tier, and the W a ramp limit keeps
  // the site above the target line now.
  double holdable_rule_w() const { return holdable_w_; }
  double shortfall_w() const { return shortfall_w_; }
  double ramp_shortfall_w() const { return ramp_shortfall_w_; }

 private:
  DrFleetLoop(const DrEvent& ev, const std::vector<DrNode>& nodes, const DrLoopOptions& lo,
              DrFleetLoopOptions fo, std::unique_ptr<fleet::Allocator> alloc);
  fleet::NodeRecord record(size_t i, const DrReadings& r) const;
  void build_schedule();

  const DrEvent& ev_;
  std::vector<DrNode> nodes_;
  DrFleetLoopOptions fo_;
  std::unique_ptr<fleet::Allocator> alloc_;
  std::unique_ptr<fleet::SiteRound> round_;
  std::vector<std::string> names_;
  double site_w_ = 0;
  fleet::GridSchedule grid_;
  bool have_grid_ = false;
  double base_sum_ = 0;
  int64_t base_n_ = 0;
  double last_round_s_ = -1e300;
  std::map<std::string, fleet::Assignment> assigned_;
  DrCommand cmd_;
  std::vector<bool> paused_;
  std::vector<DrPauseSpan> pauses_;
  int infeasible_ = 0;
  double fall_w_per_s_ = 0, rise_w_per_s_ = 0;
  double holdable_w_ = std::numeric_limits<double>::quiet_NaN(), shortfall_w_ = 0;
  double ramp_shortfall_w_ = 0, baseline_w_ = 0;
};

}  // namespace fw::studies

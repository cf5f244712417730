#pragma once
// SiteRound: the site's planning step — the one site loop of flexwatt. The coordinator runs it
// each round on what it read from etcd (coordinator.hpp), `flexwatt dr replay` on its simulated
// nodes (studies/dr_replay.hpp, "coordinator" loop): the same code, so what the replay measures
// is what the coordinator does. No I/O, no clock: time comes in with the input.
//
// Contract. plan(in) with `in` as plan_split takes it (split_plan.hpp), minus what this step
// fills itself; every call is one round at in.now_unix_s (non-decreasing):
//   measured  = Σ draw_w of the live records (the site's power); baseline likewise from their
//               uncontrolled_w (their nameplate when 0)
//   line      = min(effective budget now, at now + in.lookahead_s) (grid.hpp)
//   loop      (options.site_loop.enabled): the site loop (site_loop.hpp) updates on measured
//               and line, binding while line < in.site_w, with the feed-forward model from the
//               records' draw curves through the allocator (a node without a curve draws its
//               share; nodes of paused jobs hold their floors and draw what they draw now; the
//               joiner room plan_split keeps is left out of the split) and the binding event's
//               ramp rates (ramp_w_per_s down, ramp_up_w_per_s up, else ramp_w_per_s); it sets
//               in.track_w = clamp(split − line, 0, site − line), in.reclaim (off while binding
//               unless options.reclaim), in.binding, in.pause_stagger_s, in.pause_split_w (the
//               loop's feed-forward split) and the pause budgets (in.paused_s: seconds each job has
//               been paused while the line binds, counted by this object; in.event_span_s: the
//               lowest event in force; past the event's end nothing pauses: in.binding false). Off:
//               none of these are touched.
//   tiers     (options.tier_window: end > start; else a job's tier is judged per event, as
//               split_plan.hpp "pausing" says): a job's tier holds over the window [start, end]
//               given its progress. This object counts each job's progress since the window's
//               start, Σ t_rel · dt with t_rel the job's throughput curve (NodeRecord
//               throughput_curve, mean over its live nodes) at its nodes' reported caps (cap_w),
//               0 while its assignment says pause, held from one round to the next; a job first
//               seen is taken to have run uncapped since the start. The spell = the events below
//               the site budget in force now (else the first to come), chained while the next
//               starts by the last one's end; E = min(its end, window end), from = max(now, its
//               start). Per job with tier_min t > 0 (W the window's length, P its progress):
//                 hold_tier    = clamp(((t + 0.005) W − P − (from − now) − (end − E)) /
//                                (E − from), 0, 1): the least throughput to keep from `from` to
//                                E, running uncapped before and after (JobRecord::hold_tier,
//                                set on its live records: the curves allocators' floor);
//                 pause_left_s = max(0, P + (from − now) + (end − from) − (t + 0.01) W −
//                                resume_s − 2 pause_stagger_s): how long it may still pause
//                                and, resumed (it may wait a stagger behind another change,
//                                then resume_s without progress), end the window at t + 0.01
//                                (in.pause_left_s).
//   plan      = plan_split(in, allocator)
//   holdable  = site_holdable against the deepest event in force or to come (split_plan.hpp),
//               in draw watts with the loop (budget watts without), with its shortfall
// Not thread-safe (one caller: the coordinator's run thread, the replay's loop).

#include <map>
#include <set>
#include <string>

#include "fleet/allocator.hpp"
#include "fleet/site_loop.hpp"
#include "fleet/split_plan.hpp"

namespace fw::fleet {

// The lookahead a round plans with (PlanInput::lookahead_s): on a ramp, where the budget will be
// when the next ramp round can land (rounds run on 0.5 % moves, each taking up to a tick of
// tick_s): 2 ticks + the time of a 1 % move of site_w at the slowest event's ramp rate (at most
// 1 % of kMaxRampS).
double round_lookahead_s(double tick_s, double site_w, const GridSchedule& grid);

// The span a job's tier is judged over (unix s); end <= start: per event.
struct TierWindow {
  double start_unix_s = 0, end_unix_s = 0;
};

struct SiteRoundOptions {
  SiteLoopOptions site_loop;
  bool reclaim = false;        // reclaim while the loop tracks (CoordinatorOptions)
  double pause_stagger_s = 0;  // least time between two pause/resume changes (0: never pause)
  TierWindow tier_window;      // "tiers" (default: none, a job's tier is judged per event)
  double resume_s = 0;         // under a tier window: the time a resumed job takes to make progress
};

struct SiteRoundResult {
  Plan plan;
  double measured_w = 0, baseline_w = 0;
  double line_w = 0;                 // the effective budget the loop judged (site budget: none)
  double ramp_limit_w_per_s = 0;     // the binding event's ramp rate down (0: none)
  double ramp_up_limit_w_per_s = 0;  // and up (its ramp_up_w_per_s, else the same)
  bool ramp_limited = false;         // an event with a ramp rate moved the line this round
  SiteHoldable holdable;
  double shortfall_w = 0;
  std::string shortfall_event;  // the deepest event's correlation id ("" when none)
};

class SiteRound {
 public:
  // `allocator` is not owned and must outlive this object.
  SiteRound(SiteRoundOptions o, const Allocator& allocator)
      : o_(o), allocator_(&allocator), loop_(o.site_loop) {}

  SiteRoundResult plan(PlanInput in);

  const SiteLoop& loop() const { return loop_; }
  const SiteRoundOptions& options() const { return o_; }
  const std::set<std::string>& paused_jobs() const { return paused_jobs_; }

 private:
  SiteRoundOptions o_;
  const Allocator* allocator_;
  SiteLoop loop_;
  double last_pause_change_s_ = -1e300;
  std::set<std::string> paused_jobs_;
  std::map<std::string, double> paused_s_;
  double last_pause_count_s_ = -1;
  double event_span_s_ = 0;  // the binding event's span, kept through its release ramp
  // Tier window ("tiers"): per job id its progress (s at t_rel 1) and t_rel in force.
  void account_tiers(PlanInput& in);
  std::map<std::string, double> progress_s_, trel_;
  double last_progress_s_ = -1;
};

}  // namespace fw::fleet

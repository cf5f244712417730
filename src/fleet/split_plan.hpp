#pragma once
// plan_split: one coordinator round as a pure function (no I/O): from the live node records,
// the current assignments, the "known off" markers, the site budget and the grid target,
// the watts each live node gets.
//
// Contract (the site budget holds whatever the nodes do with what they were given):
//   effective = min(effective_budget_w(site_w, grid, now), ... at now + lookahead_s)
//               (grid.hpp, ramps included; the lookahead covers the round's lag on a ramp)
//   held      = nodes with an assignment, no live record and no off marker: their GPUs may
//               sit at their last caps, so each reserves max(watts, safe_w, reserve_w)
//   reserve   = per live node, what to store as the assignment's reserve_w (keys.hpp):
//               max(new watts, reported cap_w, and the previous reserve unless the node's
//               record is newer than the previous write, i.e. it has confirmed it)
//   split     = effective + track_w (the site loop's hand-back of unused watts, site_loop.hpp;
//               0 without it)
//   live      = allocator.split(split - sum(held reserves), live records)
//   reclaim   = after the allocator's split (any allocator, `equal` included): a node is busy
//               when it draws within margin/2 of what it holds (its current assignment; its
//               floor min_w when it has none) and its share is below its nameplate; idle when
//               it draws less than that and more than margin under its new share
//               (margin = kReclaimMargin x its nameplate).
//               With both present, each idle node keeps max(min_w, draw + margin) and what
//               it gives up goes to the busy nodes (water-filling per GPU, up to their
//               nameplates; the rest stays with the idle nodes). An idle node whose draw
//               comes back within margin/2 of what it keeps is busy at the next round and
//               gets its share again. The sum is unchanged, so the joiner room and the
//               budget hold; the raises go through the same limit below (a reclaimed node
//               keeps its reserve until its record confirms the lowered share). Not while
//               the site loop tracks a grid event (reclaim false): the loop already splits
//               the measured unused watts, and reclaiming them as well cut nodes in a low
//               sub-phase below what they drew a moment later (DrLive's hold 5.2 % of the
//               baseline under its target with both, 2.6 % without reclaim).
//   safe_w    = (effective - held) split over live nodes by GPU count: if every live node
//               falls back to it at once, the site stays within the effective budget.
//   raises    = then scaled back so that held + sum over live nodes of max(watts, reserve)
//               <= split: a node lowered but not yet confirmed (a crashed node whose lease
//               has not run out yet, or a slow one) may still draw its reserve
//   joiner    = joiner_reserve_w (the coordinator passes the largest floor min_w of the live
//               nodes) is left unassigned, unless the live floors need it: a node that joins
//               holds its floor before the leader has lowered anyone, and then fits. Raises
//               are limited to effective - held - joiner as well. Pending joiners (join
//               markers, keys.hpp, of nodes not live yet: `pending`) add their floors to it,
//               one per pending joiner: announced joiners fit however many join at once; an
//               unannounced one fits if it is alone between two rounds.
//   pausing   = with pause_stagger_s > 0 (the coordinator's site loop while a grid event binds,
//               with a "curves" allocator): jobs are curve_jobs() of the live records
//               (allocator.hpp); a job is paused while a current assignment of one of its live
//               nodes says pause. Each paused job's nodes get their floor min_w and pause; the
//               others are split as above from what is left. At most one change per
//               pause_stagger_s (since last_pause_change_unix_s): while binding, when the
//               running jobs' tier floors (tier_floor_w) plus the paused jobs' floors exceed
//               what is left to split at pause_split_w (the site loop's feed-forward split:
//               where the curves draw the target, not the integral's swing with the duty
//               cycles; 0: split_w) less the held shares and the joiner room, the pausable running
//               job with the lowest tier_min (then the largest tier floor) pauses: the caps cannot
//               reach the target above the tiers; a paused job resumes when its tier floor fits
//               again with 10 % to spare and with what its idle nodes draw under their floors
//               (min_w - draw_w: room in the feed-forward split that goes when it runs; without
//               it the job resumed and paused again every stagger), or once no event binds
//               (binding false). With
//               event_span_s > 0 a job is paused at most (1 - tier_min) x event_span_s in the event
//               (paused_s): its whole-run tier holds if it runs at or above its tier floor the rest
//               of the time (the uncut spans count at 1). A job whose pause budget is spent counts
//               as running when the floors are judged, so the next pausable job (with budget left)
//               pauses first, and at the next change the spent one resumes: the pause passes
//               from job to job, staggered, and the site stays within the target meanwhile. A
//               spent job never pauses again in the event; when no pausable job has budget left,
//               the allocator drops the tiers (below). Without event_span_s nothing bounds a
//               pause but the event.
//   freed     = nodes with an off marker and no live record: their assignment is deleted.
//   settling  = until settle_until_unix_s (expiry_s after this leader won its election), a
//               live node without an assignment key from an earlier leader (none, or one
//               with this leader's revision) gets at most its record's safe_w (its floor
//               min_w when it published none): after an etcd rebuild or restore the
//               new leader knows no assignments, and nodes that have not re-registered yet
//               may still apply an earlier leader's assignment until it expires (at the
//               latest expiry_s after that leader's last write, which came before this win).

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/allocator.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

// The headroom a reclaimed node keeps above its draw, as a fraction of its nameplate (the
// room to show more demand before the next round gives its share back).
inline constexpr double kReclaimMargin = 0.10;

struct PlanInput {
  double now_unix_s = 0;
  double site_w = 0;  // site budget (budget key, or the configured default)
  GridSchedule grid;  // the grid events (grid.hpp effective_budget_w: the lowest wins)
  std::map<std::string, NodeRecord> live;
  std::map<std::string, Assignment> assigned;  // current assignment keys
  std::set<std::string> off;                   // off markers present
  double lookahead_s = 0;  // effective = min over [now, now + lookahead_s]: ramps down early
  double expiry_s = 0;     // lifetime the assignments were written with (write time = expiry - it)
  double settle_until_unix_s = 0;         // see "settling" (0: no settling window)
  int64_t leader_rev = 0;                 // this leader's fencing revision (settling)
  double joiner_reserve_w = 0;            // see "joiner" (0: none)
  std::map<std::string, double> pending;  // pending joiners not live yet: node -> floor min_w
  double track_w = 0;          // site loop: watts split above the effective budget (>= 0)
  bool reclaim = true;         // see "reclaim" (the coordinator: false while the site loop tracks)
  double pause_stagger_s = 0;  // see "pausing" (0: no pausing; paused jobs stay paused)
  double last_pause_change_unix_s = -1e300;
  double pause_split_w = 0;  // see "pausing" (0: the split)
  bool binding = false;      // a grid event binds (pausing)
  // See "pausing": per job id, the seconds it has been paused in the binding event (the
  // coordinator counts them), and the event's span (grid target end - start; 0: no limit).
  std::map<std::string, double> paused_s;
  double event_span_s = 0;
  // Per job id, under a tier window (site_round.hpp): the seconds of pause the job can still
  // afford from now; for the jobs listed it replaces (1 - tier_min) x event_span_s - paused_s
  // in "pausing" and site_holdable.
  std::map<std::string, double> pause_left_s;
};

struct Plan {
  double site_w = 0;
  double effective_w = 0;                   // after the grid target and ramps
  double split_w = 0;                       // effective + track_w: what is split
  double held_w = 0;                        // reserved for departed nodes not known off
  double joiner_w = 0;                      // left unassigned for a joiner's floor
  std::map<std::string, double> watts;      // per live node
  std::map<std::string, double> safe_w;     // per live node
  std::map<std::string, double> reserve_w;  // per live node
  std::vector<std::string> held;            // departed, share reserved
  std::vector<std::string> freed;           // off: assignment to delete
  bool below_floors = false;                // live floors exceed what is left: site over budget
  std::set<std::string> paused_jobs;        // job ids paused after this round ("pausing")
  std::set<std::string> paused_nodes;       // their live nodes (assignments say pause)
  bool pause_changed = false;               // this round paused or resumed a job
};

Plan plan_split(const PlanInput& in, const Allocator& allocator);

// The deepest grid target the site can hold (issue 45), from the live records, in budget watts
// (what the nodes are assigned; a paused job's nodes hold their floors) or, with `draw`, in the
// watts the nodes draw at those budgets (each node's published draw curve, keys.hpp
// curve_draw_w; its budget without one): what the site loop, which judges measured power,
// holds. A paused node is counted at its published paused_draw_w (keys.hpp), else at its draw
// at its floor budget (its GPUs idle under that cap; an upper bound on what they draw). Per job, a
// node's budget is the job's x its GPUs / the job's GPUs, at least its min_w.
//   floor_w    = held_w + every live node at its floor min_w: below it nothing holds;
//   holdable_w = held_w + per job of curve_jobs(live): its running floor (max(tier_floor_w,
//                its nodes' min_w) with `tiers`, the curves allocators' rule; else its nodes'
//                min_w), less what pausing sheds at every instant: with in.pause_stagger_s > 0
//                a pausable job may be paused a fraction φ = its budget left ((1 - tier_min) x
//                in.event_span_s - in.paused_s[job]; unbounded when the span is 0) / span_left_s
//                (capped at 1; 1 when span_left_s <= 0) of what is left of the event; with
//                Σ φ >= k, k of them can be paused at every instant, taking turns (McNaughton's
//                wrap-around), and the rule counts the k smallest sheds (running floor - paused
//                draw) among those with φ > 0 (at any instant k distinct jobs are paused: at least
//                those). Staggering and the make-before-break of a turn are left out. held_w
//                (departed nodes' reserves) counts as it is, in either unit.
// A target below holdable_w cannot be held with every job at its tier (below floor_w not at
// all): holdable_shortfall_w(h, target) = max(0, holdable_w - target).
struct SiteHoldable {
  double holdable_w = 0;
  double floor_w = 0;
};
SiteHoldable site_holdable(const PlanInput& in, double held_w, bool tiers, double span_left_s,
                           bool draw = false);
double holdable_shortfall_w(const SiteHoldable& h, double target_w);

}  // namespace fw::fleet

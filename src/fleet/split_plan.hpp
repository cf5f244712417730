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
//   safe_w    = (effective - held) split over live nodes by GPU count: if every live node
//               falls back to it at once, the site stays within the effective budget.
//   raises    = then scaled back so that held + sum over live nodes of max(watts, reserve)
//               <= split: a node lowered but not yet confirmed (a crashed node whose lease
//               has not run out yet, or a slow one) may still draw its reserve
//   freed     = nodes with an off marker and no live record: their assignment is deleted.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fleet/allocator.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

struct PlanInput {
  double now_unix_s = 0;
  double site_w = 0;  // site budget (budget key, or the configured default)
  GridSchedule grid;  // the grid events (grid.hpp effective_budget_w: the lowest wins)
  std::map<std::string, NodeRecord> live;
  std::map<std::string, Assignment> assigned;  // current assignment keys
  std::set<std::string> off;                   // off markers present
  double lookahead_s = 0;  // effective = min over [now, now + lookahead_s]: ramps down early
  double expiry_s = 0;     // lifetime the assignments were written with (write time = expiry - it)
  double track_w = 0;      // site loop: watts split above the effective budget (>= 0)
};

struct Plan {
  double site_w = 0;
  double effective_w = 0;                   // after the grid target and ramps
  double split_w = 0;                       // effective + track_w: what is split
  double held_w = 0;                        // reserved for departed nodes not known off
  std::map<std::string, double> watts;      // per live node
  std::map<std::string, double> safe_w;     // per live node
  std::map<std::string, double> reserve_w;  // per live node
  std::vector<std::string> held;            // departed, share reserved
  std::vector<std::string> freed;           // off: assignment to delete
  bool below_floors = false;                // live floors exceed what is left: site over budget
};

Plan plan_split(const PlanInput& in, const Allocator& allocator);

}  // namespace fw::fleet

#pragma once
// flexwatt's key layout in etcd (docs/fleet.md, "etcd keys") and its records.
//
//   /flexwatt/<site>/nodes/<node>     NodeRecord, written by the node's agent under its lease
//   /flexwatt/<site>/assign/<node>    Assignment, written by the leading coordinator
//   /flexwatt/<site>/budget           SiteBudget, written by the operator
//   /flexwatt/<site>/budget/grid      GridSchedule, written by the grid adapter (events)
//   /flexwatt/<site>/coordinator      election name of the site's coordinators
//   /flexwatt/<site>/off/<node>       "known off": the node (or an operator) declares its GPUs
//                                     idle at their floor; the coordinator frees its share
//   /flexwatt/<site>/join/<node>      JoinMarker, "pending joiner": written (by provisioning or
//                                     an operator) before the node's agent starts; the leader
//                                     keeps its floor free and deletes it once it is assigned
//   /flexwatt/<site>/plans/<job>      a pipeline job's plan (`flexwatt pipeline plan --json`,
//                                     pipeline/plan_file.hpp), written through the coordinator's
//                                     PUT /v1/plans/<job>; every node running the job applies
//                                     its share of it (`plan:fleet` in the agent)
//
// Site and node names: 1-64 characters of [A-Za-z0-9._-]. Values are JSON objects in SI
// units. Decoding is strict: every required field present with its type and range, no
// unknown fields; an error names the key's field ("jobs[1].pfi: must be >= 0"). Upper
// bounds (assumptions, generous on purpose, so one bad writer cannot overflow the split): a
// node or job has at most kMaxRecordGpus GPUs and kMaxNodeW watts, a PFI at most 100, a site
// budget or grid target at most kMaxSiteW, times at most 1e10 unix s, windows at most a day.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"

namespace fw::fleet {
inline constexpr int64_t kMaxRecordGpus = 4096;
inline constexpr double kMaxNodeW = 1e7;
inline constexpr double kMaxSiteW = 1e12;
inline constexpr double kMaxRecordUnixS = 1e10;
}  // namespace fw::fleet

namespace fw::fleet {

Status check_name(std::string_view what, std::string_view name);  // "site"/"node"

std::string site_prefix(std::string_view site);   // "/flexwatt/<site>/"
std::string nodes_prefix(std::string_view site);  // "/flexwatt/<site>/nodes/"
std::string node_key(std::string_view site, std::string_view node);
std::string assign_prefix(std::string_view site);  // "/flexwatt/<site>/assign/"
std::string assign_key(std::string_view site, std::string_view node);
std::string off_prefix(std::string_view site);  // "/flexwatt/<site>/off/"
std::string off_key(std::string_view site, std::string_view node);
std::string join_prefix(std::string_view site);  // "/flexwatt/<site>/join/"
std::string join_key(std::string_view site, std::string_view node);
std::string budget_key(std::string_view site);
std::string plans_prefix(std::string_view site);  // "/flexwatt/<site>/plans/"
std::string plan_key(std::string_view site, std::string_view job);
// The largest plan stored (its JSON text), the grid endpoint's largest body (grid_server.hpp
// kGridMaxBodyBytes).
inline constexpr size_t kMaxPlanBytes = 64 * 1024;
std::string grid_target_key(std::string_view site);
std::string election_name(std::string_view site);
// The node name of a key under nodes_prefix, assign_prefix or off_prefix; NotFound otherwise.
Result<std::string> node_of_key(std::string_view site, std::string_view key);

struct JobRecord {
  std::string id;
  int gpus = 0;           // GPUs of this node the job runs on, >= 1
  double draw_w = 0;      // current mean draw of those GPUs, >= 0
  double elasticity = 0;  // d(throughput)/d(power) relative: 0 inelastic .. 1 (>= 0)
  double pfi = 0;         // power flexibility index (docs/elasticity), >= 0
  double min_w = 0;       // floor the job needs to make progress (0: none)
  // Demand response (optional, additive; JSON "tier_min", "pausable"): the least throughput
  // relative to uncapped the job may be held at (its flexibility tier, 0 .. 1; 0: none), and
  // whether the coordinator may pause it when caps alone cannot reach a grid target. The
  // job's id names it across nodes: records with the same id are one job (split_plan.hpp).
  double tier_min = 0;
  bool pausable = false;
  // Power stabilisation (optional, additive; JSON "starts_at_unix_s"): when the job means to
  // start training (its announced starts_in_s from now; 0: it announces none). The coordinator
  // staggers announced starts (start_gate.hpp) and answers with Assignment::start_at_unix_s.
  double starts_at_unix_s = 0;
  // Likewise (JSON "ends_at_unix_s"): when the job means to stop training (its announced
  // ends_in_s from now; 0: none). The coordinator staggers announced ends (its stop gate,
  // start_gate.hpp) and answers with Assignment::stop_at_unix_s.
  double ends_at_unix_s = 0;
  // Never published (not in the record's JSON): the least throughput, relative to uncapped, the
  // job must keep while an event binds, set by the coordinator's round under a tier window
  // (site_round.hpp: its tier over the window holds given its progress so far); < 0: tier_min.
  // The curves allocators hold the job to it instead of tier_min (allocator.hpp curve_jobs).
  double hold_tier = -1;
};

struct NodeRecord {
  std::string node;
  int gpus = 0;            // >= 1
  double nameplate_w = 0;  // sum of the GPUs' maximum limits, > 0
  double min_w = 0;        // sum of the GPUs' minimum limits, 0 <= min_w <= nameplate_w
  double draw_w = 0;       // current node GPU draw, >= 0
  double cap_w = 0;        // sum of caps now applied, 0 <= cap_w
  std::vector<JobRecord> jobs;
  double time_unix_s = 0;     // when measured
  double safe_w = 0;          // the node's configured static safe share (0: not told), >= 0
  double uncontrolled_w = 0;  // predicted draw without caps (grid BASELINE; 0: nameplate)
  // What the node draws while its job is paused (optional, JSON "paused_draw_w", 0 ..
  // kMaxNodeW: its GPUs' idle draw, or 0 when a paused job's nodes are released); < 0: not
  // published (the holdable target then counts the draw at its floor, an upper bound).
  double paused_draw_w = -1;
  // The node's draw curve (optional, JSON "draw_curve": [[budget_w, draw_w], ...]): the mean
  // draw of its jobs at each node budget, budgets strictly increasing, 2..kMaxCurvePoints
  // points, 0 <= draw_w <= kMaxNodeW (a job's cap sweep; the coordinator's site loop uses it
  // as feed-forward, site_loop.hpp). Empty: none published.
  std::vector<std::pair<double, double>> draw_curve;
  // The node's throughput curve (optional, JSON "throughput_curve": [[budget_w, t_rel], ...]):
  // its jobs' throughput relative to uncapped at each node budget, the same rules as
  // draw_curve, 0 <= t_rel <= 1.5 (the "curves" allocator, allocator.hpp). Empty: none.
  std::vector<std::pair<double, double>> throughput_curve;
};

inline constexpr size_t kMaxCurvePoints = 64;
// The curve's draw at budget_w: linear between points, the end points' draw outside them
// (below the first point: scaled down with the budget, never above it). Empty curve: budget_w.
double curve_draw_w(const std::vector<std::pair<double, double>>& curve, double budget_w);

struct Assignment {
  double watts = 0;           // node GPU budget, >= 0
  int64_t revision = 0;       // coordinator's fencing revision (its leader key's), > 0
  double expires_unix_s = 0;  // the node falls back to its safe share after this
  std::string reason;         // optional, for logs: "join", "budget", "grid", ...
  // Fallback the node may use when this expires or etcd is unreachable (0: none published):
  // the site's effective budget split over every node by GPU count, so that the site stays
  // within budget if every node falls back at once. The node uses min(its own, this).
  double safe_w = 0;
  // What the node may still be drawing given assignments it has not yet confirmed (its
  // reported cap_w newer than this write): max(watts, reported caps, the previous reserve
  // while unconfirmed). A departed node's share is held back at max(watts, safe_w, reserve_w).
  double reserve_w = 0;
  // The node's job is paused by the coordinator's site loop (optional, additive; JSON "pause":
  // true): the node stops the job and holds its GPUs at watts (its floor) until an assignment
  // without it (split_plan.hpp "pausing").
  bool pause = false;
  // The node's jobs that announced a start may start training at this time, not before
  // (optional, additive; JSON "start_at_unix_s"; 0: no gate): the latest slot the coordinator's
  // start gate gave them (start_gate.hpp).
  double start_at_unix_s = 0;
  // The node's jobs that announced an end may stop training at this time, not before (optional,
  // additive; JSON "stop_at_unix_s"; 0: no gate): the latest slot the coordinator's stop gate
  // gave them; until then the job trains on (or runs its fill).
  double stop_at_unix_s = 0;
};

// A pending joiner's announcement: the floor its GPUs will hold once its agent starts.
struct JoinMarker {
  double min_w = 0;  // >= 0, at most kMaxNodeW
};

struct SiteBudget {
  double watts = 0;      // site GPU budget, > 0
  double window_s = 30;  // judged on means over this window, > 0
  std::string source;    // "static", "operator", ...
  double time_unix_s = 0;
};

// NVIDIA-style load target: the latest written wins; value_w null means "site default".
struct GridTarget {
  std::optional<double> value_w;  // >= 0
  double start_unix_s = 0;
  double end_unix_s = 0;       // 0: open-ended; else > start
  double ramp_w_per_s = 0;     // the ramp down to the value (0: as fast as allowed)
  double ramp_up_w_per_s = 0;  // the ramp back up after end (0: ramp_w_per_s; issue 45)
  bool best_effort = false;
  std::string correlation_id;  // non-empty
};

// The site's grid events, stored at the grid key as {"events": [GridTarget, ...]} (a lone
// GridTarget object, the layout before schedules, reads as a one-event schedule). Only
// events with a value are kept; how they combine: grid.hpp, effective_budget_w. Implicit
// from one target (none when its value is null) so a single target is a schedule.
struct GridSchedule {
  std::vector<GridTarget> events;
  GridSchedule() = default;
  GridSchedule(std::nullopt_t) {}      // NOLINT(google-explicit-constructor)
  GridSchedule(const GridTarget& t) {  // NOLINT(google-explicit-constructor)
    if (t.value_w) events.push_back(t);
  }
  GridSchedule(const std::optional<GridTarget>& t) {  // NOLINT(google-explicit-constructor)
    if (t && t->value_w) events.push_back(*t);
  }
};

// The hook through which an agent publishes its jobs' PFI (declared in the job's registration
// or config, or measured by a sweep): sets jobs[k].pfi = pfi_by_job[jobs[k].id] for every job
// the map names with a finite value > 0; other jobs keep theirs (0: unknown, the per-job
// allocators then use 1 / elasticity, else 1). Returns how many jobs were set.
int set_job_pfi(NodeRecord& record, const std::map<std::string, double>& pfi_by_job);

std::string encode(const NodeRecord& r);
std::string encode(const Assignment& r);
std::string encode(const SiteBudget& r);
std::string encode(const JoinMarker& r);
std::string encode(const GridTarget& r);
std::string encode(const GridSchedule& r);

// `where` prefixes error messages (usually the etcd key).
Result<NodeRecord> decode_node(std::string_view json, std::string_view where);
Result<Assignment> decode_assignment(std::string_view json, std::string_view where);
Result<SiteBudget> decode_budget(std::string_view json, std::string_view where);
Result<JoinMarker> decode_join(std::string_view json, std::string_view where);
Result<GridTarget> decode_grid_target(std::string_view json, std::string_view where);
Result<GridSchedule> decode_grid_schedule(std::string_view json, std::string_view where);

}  // namespace fw::fleet

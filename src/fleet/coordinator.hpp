#pragma once
// Coordinator: one member of a site's coordinator group. Every member campaigns for the
// site's election (short campaign timeouts, in a loop); the leader splits the budget
// (split_plan.hpp) and writes fenced assignments (site_store.hpp fencing: a transaction that
// compares its leader key's create revision, so a deposed leader writes nothing).
//
// Contract:
//  - A round reads nodes, assignments, off markers, budget and grid target, plans, and writes
//    in two fenced transactions: first every assignment that goes down or stays, then those
//    that go up (so a re-split never raises one node before lowering another); it deletes
//    the assignment and off marker of nodes known off.
//  - With the site loop on, rounds also run every site_loop.period_s while a grid event binds
//    (reason "track"); the split is then the effective budget plus the loop's integral, moving
//    no faster than the binding event's ramp_w_per_s (both ways; site_loop.hpp "limits").
//  - Every round computes the deepest target the site can hold and the shortfall of the
//    deepest event in force or to come (CoordinatorStats; GET /v1/grid/status shows them).
//  - Rounds run on a node join or leave, a change of a node's jobs, an off marker, the budget
//    or the grid target (a draw update alone waits for the refresh), every
//    refresh_s (assignments are rewritten with expires = now + expiry_s), and every tick
//    while a grid ramp moves the effective budget by > 0.5 %.
//  - Leadership is lost when its lease is lost or a fenced write fails; the member then
//    campaigns again with a fresh lease.
//  - Thread-safe accessors; one background thread plus a watch thread and a lease keeper.

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleet/allocator.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/etcd_watch.hpp"
#include "fleet/grid.hpp"
#include "fleet/lease_keeper.hpp"
#include "fleet/site_loop.hpp"
#include "fleet/site_round.hpp"
#include "fleet/split_plan.hpp"
#include "fleet/start_gate.hpp"

namespace fw::fleet {

struct CoordinatorOptions {
  std::string site;
  std::string id;                   // election value: who leads (e.g. "coord-a http://...")
  std::string allocator = "equal";  // make_allocator()
  double lease_ttl_s = 3;           // leadership lease; takeover within it (+ campaign)
  double campaign_timeout_s = 1;    // each campaign call
  double expiry_s = 10;             // assignment lifetime
  double refresh_s = 2;             // rewrite period, < expiry_s / 2
  double default_budget_w = 0;      // when the budget key is unset (0: assign nothing)
  double tick_s = 0.1;
  // The closed site loop under a grid target (site_loop.hpp; off by default): while an event
  // binds, a round at least every site_loop.period_s ("track") splits the line plus what the
  // nodes' measured draw leaves unused.
  SiteLoopOptions site_loop;
  // With the site loop on and a grid event binding: pause a pausable job (split_plan.hpp
  // "pausing") when the tiers' floors do not fit, at most one pause or resume per this many
  // seconds (0: never pause); a job is paused at most (1 - its tier_min) of the event's span,
  // then the next pausable job takes its turn.
  double pause_stagger_s = 0;
  // Reclaim idle headroom (split_plan.hpp "reclaim") while the site loop tracks too (default
  // off: the loop re-splits the unused watts itself; docs/fleet.md measures both).
  bool site_loop_reclaim = false;
  // Staggered job starts (start_gate.hpp): the site's average rise over the starts its jobs
  // announce, W/s; each node's assignment carries the slot of its jobs (start_at_unix_s).
  // 0 (default): no gate.
  double start_ramp_w_per_s = 0;
  // Staggered job stops (the same gate, start_gate.hpp, on the ends the jobs announce): the
  // site's average fall over them, W/s; each node's assignment carries the stop slot of its
  // jobs (stop_at_unix_s). 0 (default): no gate.
  double stop_ramp_w_per_s = 0;
  // The span jobs' tiers are judged over (site_round.hpp "tiers": a job's tier holds over the
  // window given its progress, which the leader counts from its throughput curve; end <= start,
  // the default: per event) and the time a resumed job takes to make progress again.
  TierWindow tier_window;
  double resume_s = 0;
};

// A change of the site's ramp state (grid.hpp ramp_state), seen by the leader each tick:
//   "ramp_start"     the effective budget starts moving (to target_w)
//   "ramp_end"       it stopped moving (at effective_w)
//   "target_reached" a ramp down ended at the grid target: the assignments written from now
//                    on sum to at most target_w (+ held shares, which the plan subtracts)
struct RampEvent {
  double time_unix_s = 0;
  std::string kind;
  std::string state;  // ramp state after the change: idle | ramping_down | holding | ramping_up
  double effective_w = 0;
  double target_w = 0;  // where the ramp goes (the grid value, or site_w on the way back up)
  std::string correlation_id;
};

// {"kind", "state", "effective_w", "target_w", "correlation_id"} and "time_unix_s", or "t_s"
// = time - t0_unix_s when t0_unix_s > 0.
nlohmann::json to_json(const RampEvent& e, double t0_unix_s = 0);

struct CoordinatorStats {
  bool leader = false;
  int64_t leader_rev = 0;
  int64_t rounds = 0;
  int64_t keys_written = 0;  // assignment puts and deletes
  int64_t txns = 0;
  int64_t fenced_refusals = 0;  // writes refused because leadership was lost
  int64_t elections_won = 0;
  std::vector<double> latencies_s;  // watched change -> assignments written (last 10,000)
  Plan last_plan;
  double last_power_w = 0;     // sum of live nodes' draw at the last round
  double last_baseline_w = 0;  // sum of their uncontrolled predictions
  double last_split_w = 0;     // what the last round split (effective + site loop)
  double site_loop_margin_w = 0;
  double site_loop_integral_w = 0;
  bool site_loop_dip = false;     // the loop saw a dip at the last round (raises frozen)
  double site_loop_excess_w = 0;  // its dip test's terms (site_loop.hpp excess_w)
  double site_loop_steady_excess_w = 0;
  std::vector<std::string> paused_jobs;  // after the last round
  int64_t pause_changes = 0;             // pauses and resumes while leading
  std::string ramp_state = "idle";
  std::vector<RampEvent> ramp_events;  // while leading, oldest first (last 1,000)
  // Issue 45, at the last round (split_plan.hpp site_holdable; in draw watts with the site loop,
  // else in budget watts): the deepest target the site holds with every job at its tier (the
  // curves allocators; else its floors), pausable jobs taking turns within their budgets for
  // the deepest event in force or still to come; the
  // site's floor (every live node at min_w, plus held shares); and that event's shortfall
  // (max(0, holdable - its value); 0 and "" when no event is in force or to come).
  double holdable_target_w = 0;
  double site_floor_w = 0;
  double shortfall_w = 0;
  std::string shortfall_event;
  // The site loop under the binding event (issue 45): its ramp limit (the event's
  // ramp_w_per_s; 0: none) and the split's fastest fall and rise since the event began to bind
  // (site_loop.hpp), W/s.
  double ramp_limit_w_per_s = 0;
  double split_max_fall_w_per_s = 0, split_max_rise_w_per_s = 0;
};

class Coordinator {
 public:
  static Result<std::unique_ptr<Coordinator>> Start(EtcdClientOptions etcd,
                                                    CoordinatorOptions options);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // resign: give leadership up at once (clean stop). false: behave like a crash (no resign,
  // no revoke: the lease runs out and another member takes over after its TTL).
  void stop(bool resign = true);
  bool leader() const { return leader_.load(); }
  CoordinatorStats stats() const;
  // Grid input: adds events to the site's schedule (grid.hpp schedule_events: same group
  // replaced, past refused, overlaps by the lowest); any member may. The change's
  // http_status says how it went (200; 404, 409, 422 with error); an etcd failure is an error.
  Result<ScheduleChange> schedule_grid(const std::string& group,
                                       const std::vector<GridTarget>& events);
  // One target as its own group (its correlation_id); a refusal is InvalidArgument.
  Status put_grid_target(const GridTarget& target);
  EtcdClient& etcd() { return *etcd_; }
  const CoordinatorOptions& options() const { return options_; }

 private:
  Coordinator(std::unique_ptr<EtcdClient> etcd, CoordinatorOptions options,
              std::unique_ptr<Allocator> allocator);
  void run();
  bool campaign();
  // One round; false if leadership was lost.
  bool round(const std::string& reason);
  Result<bool> fenced(const std::vector<TxnOp>& ops);
  void lose_leadership();
  void on_events(const std::vector<WatchEvent>& events);
  // Per live node, the start (stop) gate's slot of its jobs that announce a start (an end);
  // none: no entry.
  std::map<std::string, double> start_slots(const PlanInput& in);
  std::map<std::string, double> stop_slots(const PlanInput& in);
  // Leader, each tick: compares the ramp state now with the last one and records events.
  void track_ramp(double now_unix_s);
  static double now_s();

  std::unique_ptr<EtcdClient> etcd_;
  CoordinatorOptions options_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<LeaseKeeper> keeper_;
  std::unique_ptr<EtcdWatch> watch_;
  LeaderKey leader_key_;
  std::atomic<bool> leader_{false};
  std::atomic<bool> stop_{false};
  bool resign_on_stop_ = true;
  bool ramp_pending_ = false;  // run thread only, as the next two
  PlanInput last_in_;          // site budget and grid target of the last round
  double last_effective_w_ = 0;
  RampState ramp_state_ = RampState::kIdle;
  GridTarget last_event_;   // the event last seen moving the budget (ramp events name it)
  bool ramp_seen_ = false;  // the first state seen after a round is the start, not an event
  double won_at_s_ = 0;     // when this member last won the election (unix s; run thread)
  // The planning step (site_round.hpp): the site loop, pausing and its budgets. Run thread only.
  SiteRound site_round_;
  StartGate start_gate_{0};  // run thread only
  StartGate stop_gate_{0};   // run thread only

  mutable std::mutex mu_;
  std::condition_variable cv_;
  double dirty_since_s_ = -1;  // earliest unhandled watched change (unix s), -1: none
  CoordinatorStats stats_;
  std::thread thread_;
  std::mutex jobs_mu_;                          // watch thread only, in practice
  std::map<std::string, std::string> jobs_of_;  // node key -> its job ids, to spot changes
};

}  // namespace fw::fleet

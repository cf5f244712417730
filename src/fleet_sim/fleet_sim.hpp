#pragma once
// run_fleet_sim: a site on one machine against a running etcd cluster: two coordinators and
// N node links in this process (each link its own lease and identity), each link driving a
// simulated node (sim_node.hpp: a sim::Cluster of the node scenario, the simulator every other
// result is judged on, with its uncapped twin) from its budget. Node i runs the node scenario
// with seed `seed * 1000 + i` and its job's phase offset drawn in [0, phase_spread_s).
//
// Scenario "site" (the protocol under churn), relative to the duration D:
//   0 - 0.05 D   nodes join (staggered)
//   0.15 D       operator lowers the site budget by 10 %
//   0.25 D       N/8 nodes leave cleanly (off marker)
//   0.30 D       one node crashes (its lease runs out; its share is held back)
//   0.35 D       N/8 new nodes join
//   0.40 D       grid target: -30 % of the budget from 0.45 D to 0.90 D, ramps of 0.05 D
//   0.60 D       the leading coordinator crashes; the other takes over
// Scenario "dr" (demand response, issue 28's figures through the coordinator): the site budget
// is the nodes' nameplate (never binds); nodes join over 0 - 0.05 D; the baseline is the
// site's measured mean over 0.10 - 0.25 D; at 0.25 D the grid target (1 - dr_depth) x baseline
// is sent, reached at 0.35 D after a ramp down of 0.05 D, held to 0.85 D, released with a ramp
// of 0.05 D. No churn. The report's "dr" block scores the hold (dr_scores below); with a mix it
// lists the jobs' pauses and resumes in order (dr.pause_events: [{t_s, job, paused}]). It also
// has the leader's holdable target when it first judged the event and the largest shortfall it
// reported (holdable_target_w, site_floor_w, shortfall_w, holdable: coordinator.hpp
// CoordinatorStats), and "ramp": the event's rate (limit_w_per_s), the split's fastest fall and
// rise (the site loop's) and the site's (trailing 10 s means 10 s apart, from 0.30 D).
// A joining node's job starts once the node has its first assignment (GPUs idle until then;
// with start_ramp_w_per_s, at the slot its assignment carries). Each node is run by the agent's
// tick (agent_node.hpp; node_controller "none": equal caps, no agent).
// Writes <out>/trace.csv (one row per tick) and <out>/report.json, returned too. The report
// has the coordinators' ramp events and the ticks that started late (a loaded machine).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::fleet {

struct FleetSimOptions {
  std::vector<std::string> etcd;  // endpoints of the cluster
  std::string site = "sim";
  std::string scenario = "site";  // site | dr
  // The node scenario (a simulator scenario file; every GPU and job of it is one node's).
  std::string node_scenario = "scenarios/caps-pretrain-a100x8.yaml";
  int nodes = 16;
  int gpus_per_node = 0;  // > 0: the node scenario's first GPU group and job resized to it
  double duration_s = 120;
  double tick_s = 0.25;
  double budget_fraction = 0.75;    // "site": site budget = fraction x sum of uncontrolled draw
  double dr_depth = 0.25;           // "dr": target = (1 - depth) x measured baseline, (0, 1]
  bool site_loop = false;           // the coordinators' closed site loop (site_loop.hpp)
  double site_loop_ki_per_s = 0.1;  // its integral gain (SiteLoopOptions::ki_per_s)
  // "dr" with the site loop: every node publishes the node job's draw curve (sim_node.hpp
  // probe_draw_curve, measured once on node 0's scenario and seed before the run, from the
  // job's running state at the event's start: warm_s = 0.25 D) as the loop's feed-forward;
  // false: none (the loop's integral alone).
  bool draw_curves = true;
  // "dr": the nodes' job mix. "" : every node runs the node scenario's job. "aps",
  // "training-heavy", "inference-heavy": the jobs of `dr replay`'s event files
  // (scenarios/dr/aps-2025-05-01.yaml, mix-training-heavy.yaml, mix-inference-heavy.yaml;
  // fleet_sim_mix below) on the simulator's workloads: node budget GPUs as the node scenario's, the
  // jobs' GPU counts scaled onto the nodes; every node publishes its job's id, tier_min, pausable
  // and its workload's throughput curve (probe_draw_curve, one per workload), and its draw curve as
  // above.
  std::string mix;
  // The nodes' plant: "sim" (sim_node.hpp: a sim::Cluster of the node scenario or the mix's
  // workload) or "replay" (needs a mix: every node draws its job's measured cap curve with the
  // job's field-calibrated noise and dips, the plant `dr replay` runs, curve_node.hpp; the
  // mix's event file fleet_sim_mix_event gives the jobs; GPUs per node the event's unless
  // gpus_per_node > 0; the published draw and throughput curves are the job's curve × GPUs,
  // no probe).
  std::string node_plant = "sim";
  double pause_stagger_s = 10;
  bool site_loop_reclaim = false;  // CoordinatorOptions::site_loop_reclaim  // the coordinators'
                                   // (CoordinatorOptions::pause_stagger_s)
  double phase_spread_s = 60;      // jobs' phase offsets drawn in [0, this)
  // The coordinators' start gate (CoordinatorOptions::start_ramp_w_per_s; 0: off). On, a
  // joining node's job announces its start (ready at its first assignment) and starts at the
  // slot its assignment carries (start_at_unix_s); the report's "starts" block has the starts'
  // spread and the site's fastest rise while they happen.
  double start_ramp_w_per_s = 0;
  // The jobs' end (issue #48: synchronous stops). > 0: at this fraction of the duration every
  // started node's job ends for good (its GPUs idle, SimNode::stop), having announced it
  // end_notice_s before (JobRecord::ends_at_unix_s). 0: the jobs train to the run's end.
  double job_end_fraction = 0;
  double end_notice_s = 3;
  // The coordinators' stop gate (CoordinatorOptions::stop_ramp_w_per_s; 0: off). On, a job
  // that announced its end stops at the slot its assignment carries (stop_at_unix_s), not
  // before (it trains on meanwhile); off, at its announced end. The report's "stops" block has
  // the stops' spread and the site's fastest fall while they happen.
  double stop_ramp_w_per_s = 0;
  std::string allocator = "equal";
  // The controller each node's agent runs (agent_node.hpp: the agent's tick, limiter and share
  // guard over the node's simulated GPUs; any agent controller spec; default the agent's own,
  // pid); "none": no agent, the node budget applied as equal per-GPU caps.
  std::string node_controller = "pid";
  double lease_ttl_s = 3;       // coordinators'
  double node_lease_ttl_s = 5;  // node links'
  double expiry_s = 10;
  double refresh_s = 3;
  uint64_t seed = 1;
  // PFI published with each simulated node's job (node i runs job i; nodes + max(1, nodes/8)
  // jobs), each > 0; empty: none published (the allocators use 1).
  std::vector<double> job_pfi;
  std::string out_dir;
};

// A job of a mix: its name (the replay's), GPUs in the field, the simulator workload that stands
// in for it, its tier and whether it may be paused.
struct FleetSimMixJob {
  std::string name;
  int field_gpus = 0;
  std::string workload;
  double tier_min = 0;
  bool pausable = false;
  int nodes = 0;  // nodes of the run (largest remainder of field_gpus / sum x nodes, >= 1)
};
// A mix over `nodes` nodes (InvalidArgument for an unknown mix or fewer nodes than jobs).
Result<std::vector<FleetSimMixJob>> fleet_sim_mix(const std::string& mix, int nodes);

// The replay's event file of a mix (relative to the project's root: scenarios/dr/...).
Result<std::string> fleet_sim_mix_event(const std::string& mix);

// Simulated jobs of a run: nodes + max(1, nodes / 8) ("site"), nodes ("dr").
int fleet_sim_jobs(const FleetSimOptions& options);

// The issue-28 scores of a "dr" run from its trace (times relative to the run's start):
//   minutes_above_target   tumbling 1-minute means over the hold above target + tolerance
//                          (tolerance_frac x baseline), counted in minutes (a partial last
//                          window counts its share)
//   windows_10s_above      the same on 10 s means, as a fraction of the hold's 10 s windows
//   mean_overcut_frac      mean over the hold of max(0, target - power) / baseline (per tick:
//                          the site's tick-to-tick swing under the target counts)
//   mean_overcut_1min_frac the same on the tumbling 1-minute means (the tracking alone)
//   ramp_down_s            from the ramp's start until the site's trailing 10 s mean is first
//                          at or below target + tolerance
//   release_recovered_frac the site's mean over the last 0.05 D / its uncapped twin's mean
struct DrTraceRow {
  double t_s = 0, site_w = 0, uncontrolled_w = 0, target_w = 0;
};
nlohmann::json dr_scores(const std::vector<DrTraceRow>& rows, double baseline_w, double hold_from_s,
                         double hold_to_s, double ramp_from_s, double duration_s,
                         double tolerance_frac = 0.01);

Result<nlohmann::json> run_fleet_sim(const FleetSimOptions& options);

}  // namespace fw::fleet

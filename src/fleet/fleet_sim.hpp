#pragma once
// run_fleet_sim: a site on one machine against a running etcd cluster: two coordinators and
// N node links in this process (each link its own lease and identity), each link driving
// simulated GPUs' caps from its budget. A fixed scenario on a timeline relative to the
// duration D:
//   0 - 0.05 D   nodes join (staggered)
//   0.15 D       operator lowers the site budget by 10 %
//   0.25 D       N/8 nodes leave cleanly (off marker)
//   0.30 D       one node crashes (its lease runs out; its share is held back)
//   0.35 D       N/8 new nodes join
//   0.40 D       grid target: -30 % of the budget from 0.45 D to 0.90 D, ramps of 0.05 D
//   0.60 D       the leading coordinator crashes; the other takes over
// A joining node's job starts once the node has its first assignment (GPUs idle until then).
// Simulated GPU: uncontrolled draw d (job-specific, slow noise), power = min(d, cap);
// throughput of a job relative to uncontrolled = max(0, 1 - (1 - power/d) / PFI), the linear
// model of allocation::job_from_pfi. Each node runs one job whose PFI it publishes in its
// registration (set_job_pfi), so the pfi/greedy allocators see the jobs' real flexibility.
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
  int nodes = 16;
  int gpus_per_node = 8;
  double duration_s = 120;
  double tick_s = 0.25;
  double budget_fraction = 0.75;  // site budget = fraction x sum of uncontrolled draw
  std::string allocator = "equal";
  double lease_ttl_s = 3;       // coordinators'
  double node_lease_ttl_s = 5;  // node links'
  double expiry_s = 10;
  double refresh_s = 3;
  uint64_t seed = 1;
  // PFI of each simulated job (node i runs job i; nodes + max(1, nodes/8) jobs), each > 0;
  // empty: drawn uniformly from [1.1, 5] with the seed (the CLI passes the simulator's).
  std::vector<double> job_pfi;
  std::string out_dir;
};

// Simulated jobs of a run: nodes + max(1, nodes / 8).
int fleet_sim_jobs(const FleetSimOptions& options);

Result<nlohmann::json> run_fleet_sim(const FleetSimOptions& options);

}  // namespace fw::fleet

// flexwatt fleet-sim: a site on one machine against a running etcd cluster (start one with
// scripts/fleet_sim.sh): two coordinators and N node links driving simulated GPUs through a
// scenario of joins, leaves, a budget change, a grid event and a coordinator crash
// (src/fleet/fleet_sim.hpp). Writes trace.csv and report.json. Each simulated job's PFI
// comes from the simulator's workload space (studies::draw_shape: a class, a mix and a
// simulated cap sweep per job), so the pfi and greedy allocators split on real values.

#include "fleet/fleet_sim.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_table.hpp"
#include "studies/population.hpp"

namespace fw::cli {
namespace {

// One PFI per simulated job, from simulated sweeps of jobs drawn from the workload space.
Result<std::vector<double>> simulated_job_pfi(const fleet::FleetSimOptions& o,
                                              const std::string& gpu) {
  std::mt19937_64 rng(o.seed);
  std::vector<double> pfi;
  for (int i = 0; i < fleet::fleet_sim_jobs(o); ++i) {
    FW_ASSIGN_OR_RETURN(studies::SimulatedJob job, studies::draw_shape(rng, gpu));
    pfi.push_back(job.pfi);
  }
  return pfi;
}

int run_fleet_sim(int argc, char** argv) {
  CLI::App app(
      "Run a simulated site (2 coordinators, N node links with simulated GPUs) against an\n"
      "etcd cluster: joins, leaves, budget change, grid event, leader crash.\n\n"
      "Example:\n"
      "  scripts/fleet_sim.sh --nodes 16 --duration-s 120 --out /tmp/fleet\n"
      "  flexwatt fleet-sim --etcd http://127.0.0.1:2379,http://127.0.0.1:22379 --out /tmp/f",
      "fleet-sim");
  fleet::FleetSimOptions o;
  std::string etcd;
  bool json = false, quiet = false;
  app.add_option("--etcd", etcd, "comma-separated etcd endpoints")->required();
  app.add_option("--out", o.out_dir, "directory for trace.csv and report.json")->required();
  app.add_option("--nodes", o.nodes, "node links at start (default 16; N/8 more join later)");
  app.add_option("--gpus", o.gpus_per_node, "simulated GPUs per node (default 8)");
  app.add_option("--duration-s", o.duration_s, "wall-clock seconds (default 120)")
      ->check(finite_in(20, 86400));
  app.add_option("--allocator", o.allocator, "equal | proportional | pfi | greedy");
  app.add_option("--budget-fraction", o.budget_fraction,
                 "site budget as a fraction of the uncontrolled draw (default 0.75)")
      ->check(finite_in(0, 2, true));
  app.add_option("--site", o.site, "site name (default sim)");
  app.add_option("--seed", o.seed, "seed of the simulated GPUs (default 1)")->check(seed_value());
  std::string gpu = "h200-sxm";
  app.add_option("--pfi-gpu", gpu, "GPU preset of the jobs' simulated PFI sweeps (h200-sxm)");
  app.add_flag("--json", json, "print the report as JSON");
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::stringstream ss(etcd);
  for (std::string e; std::getline(ss, e, ',');) {
    if (!e.empty()) o.etcd.push_back(e);
  }
  if (o.etcd.empty()) return fail("fleet-sim", Status::InvalidArgument("--etcd: no endpoint"));
  if (o.nodes >= 2) {
    auto pfi = simulated_job_pfi(o, gpu);
    if (!pfi.ok()) return fail("fleet-sim", pfi.status());
    o.job_pfi = std::move(*pfi);
  }
  // The run is wall-clock time and reports nothing while it runs: elapsed against its length.
  Progress progress("fleet-sim", progress_wanted(quiet));
  progress.tick(0.5, [&progress, &o] {
    char b[128];
    const double e = progress.elapsed_s();
    std::snprintf(b, sizeof b, "%d nodes, %.0f/%.0f s wall (%.0f %%)", o.nodes,
                  std::min(e, o.duration_s), o.duration_s, 100 * std::min(1.0, e / o.duration_s));
    return std::string(b);
  });
  auto report = fleet::run_fleet_sim(o);
  progress.finish();
  if (!report.ok()) return fail("fleet-sim", report.status());
  const nlohmann::json& r = *report;
  if (json) {
    std::printf("%s\n", r.dump(2).c_str());
    return 0;
  }
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "fleet-sim: %d nodes x %d GPUs, %.0f s: 30 s windows within budget %d/%d; realloc p99 "
      "%.3f s; takeover %.2f s; assignment writes %.1f/s, registrations %.1f/s; throughput "
      "retained %.3f; late ticks %lld",
      o.nodes, o.gpus_per_node, o.duration_s, r["windows_30s_within_budget"].get<int>(),
      r["windows_30s"].get<int>(), r["realloc_latency_s"]["p99"].get<double>(),
      r["coordinator_takeover_s"].get<double>(),
      r["etcd_writes_per_s"]["assignment_keys"].get<double>(),
      r["etcd_writes_per_s"]["node_registrations"].get<double>(),
      r["throughput_retained_mean"].get<double>(), (long long)r["late_ticks"].get<int64_t>());
  std::printf("%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());  // fits 120 columns
  return 0;
}

}  // namespace

FW_VERB("fleet-sim", "a simulated site on etcd: coordinators, node links, grid event",
        run_fleet_sim);

}  // namespace fw::cli

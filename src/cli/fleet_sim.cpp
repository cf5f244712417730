// flexwatt fleet-sim: a simulated site against a running etcd cluster (scripts/fleet_sim.sh):
// two coordinators and N nodes, each run by the agent's tick (src/fleet_sim/agent_node.hpp),
// through the "site" or "dr" scenario (src/fleet_sim/fleet_sim.hpp). Writes trace.csv and
// report.json. --pfi-gpu: each job publishes the PFI of a job drawn from the workload space.

#include "fleet_sim/fleet_sim.hpp"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_table.hpp"
#include "studies/population.hpp"

namespace fw::cli {
namespace {

int run_fleet_sim(int argc, char** argv) {
  CLI::App app(
      "Run a simulated site (2 coordinators, N nodes, each a sim::Cluster of --node-scenario run\n"
      "by the agent's tick) against an etcd cluster. --scenario site: joins, leaves,\n"
      "budget change, grid event, leader crash; --scenario dr: a grid event of -depth on the\n"
      "measured baseline, scored (minutes above target, over-cut, ramp, performance).\n"
      "Everything it reports is simulated.\n\n"
      "Example:\n"
      "  scripts/fleet_sim.sh --nodes 16 --duration-s 120 --out /tmp/fleet\n"
      "  scripts/fleet_sim.sh --scenario dr --site-loop --nodes 64 --duration-s 480 --out /tmp/dr\n"
      "  flexwatt fleet-sim --etcd http://127.0.0.1:2379,http://127.0.0.1:22379 --out /tmp/f",
      "fleet-sim");
  fleet::FleetSimOptions o;
  std::string etcd;
  bool json = false, quiet = false;
  app.add_option("--etcd", etcd, "comma-separated etcd endpoints")->required();
  app.add_option("--out", o.out_dir, "directory for trace.csv and report.json")->required();
  app.add_option("--nodes", o.nodes, "node links at start (default 16; N/8 more join later)");
  app.add_option("--gpus", o.gpus_per_node, "GPUs per node (default: the node scenario's)");
  app.add_option("--duration-s", o.duration_s, "wall-clock seconds (default 120)")
      ->check(finite_in(20, 86400));
  app.add_option("--node-controller", o.node_controller,
                 "each node agent's controller (default pid); none: no agent, equal caps");
  app.add_option("--allocator", o.allocator,
                 "equal | proportional | pfi | greedy | curves | curves-greedy");
  app.add_option("--budget-fraction", o.budget_fraction,
                 "site budget as a fraction of the uncontrolled draw (default 0.75)")
      ->check(finite_in(0, 2, true));
  app.add_option("--site", o.site, "site name (default sim)");
  app.add_option("--seed", o.seed, "seed of the simulated GPUs (default 1)")->check(seed_value());
  std::string gpu;
  app.add_option("--pfi-gpu", gpu,
                 "publish per job the PFI of a simulated sweep of a job drawn from the workload "
                 "space on this GPU preset (e.g. h200-sxm; default: none published)");
  app.add_option("--scenario", o.scenario, "site (churn, default) | dr (a grid event, scored)")
      ->check(CLI::IsMember({"site", "dr"}));
  app.add_option("--node-scenario", o.node_scenario,
                 "simulator scenario of one node (default scenarios/caps-pretrain-a100x8.yaml)")
      ->check(CLI::ExistingFile);
  app.add_option("--dr-depth", o.dr_depth,
                 "dr: target = (1 - depth) x baseline (default 0.25; 1: a 0 W target)")
      ->check(finite_in(0, 1, true));
  bool no_curves = false;
  app.add_flag("--site-loop", o.site_loop,
               "coordinators run the closed site loop under the grid target");
  app.add_option("--site-loop-ki", o.site_loop_ki_per_s,
                 "the site loop's integral gain, W per W s (default 0.1)")
      ->check(finite_in(0, 10));
  app.add_flag("--no-draw-curves", no_curves,
               "nodes publish no draw curve: the site loop runs without feed-forward");
  app.add_option("--mix", o.mix,
                 "dr: the nodes' job mix: aps | training-heavy | inference-heavy (the jobs of "
                 "dr replay's event files; default: every node the node scenario's job)")
      ->check(CLI::IsMember({"aps", "training-heavy", "inference-heavy"}));
  app.add_option("--node-plant", o.node_plant,
                 "sim (default: the simulator's workloads) | replay (with --mix: the jobs' "
                 "measured curves, field noise and dips: dr replay's plant)")
      ->check(CLI::IsMember({"sim", "replay"}));
  app.add_option("--start-ramp-w-per-s", o.start_ramp_w_per_s,
                 "coordinators' start gate: jobs start in slots at this site rise (0: off)")
      ->check(finite_in(0, 1e9));
  app.add_option("--job-end-fraction", o.job_end_fraction,
                 "the jobs end for good at this fraction of the run, announced "
                 "--end-notice-s before (0: they train to the end)")
      ->check(finite_in(0, 1));
  app.add_option("--end-notice-s", o.end_notice_s,
                 "how long before their end the jobs announce it, s (default 3)")
      ->check(finite_in(0, 3600));
  app.add_option("--stop-ramp-w-per-s", o.stop_ramp_w_per_s,
                 "coordinators' stop gate: announced ends in slots at this site fall (0: off)")
      ->check(finite_in(0, 1e9));
  app.add_option("--pause-stagger-s", o.pause_stagger_s,
                 "dr, site loop: least s between two pauses/resumes (default 10; 0: never)")
      ->check(finite_in(0, 3600));
  app.add_flag("--site-loop-reclaim", o.site_loop_reclaim,
               "dr with the site loop: also reclaim idle headroom between nodes each round");
  app.add_flag("--json", json, "print the report as JSON");
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  o.draw_curves = !no_curves;
  std::stringstream ss(etcd);
  for (std::string e; std::getline(ss, e, ',');) o.etcd.push_back(e);
  o.etcd.erase(std::remove(o.etcd.begin(), o.etcd.end(), ""), o.etcd.end());
  if (o.etcd.empty()) return fail("fleet-sim", Status::InvalidArgument("--etcd: no endpoint"));
  if (o.nodes >= 2 && !gpu.empty()) {
    // One PFI per simulated job, from simulated sweeps of jobs drawn from the workload space.
    auto pfi = studies::draw_shape_pfis(o.seed, fleet::fleet_sim_jobs(o), gpu);
    if (!pfi.ok()) return fail("fleet-sim", pfi.status());
    o.job_pfi = std::move(*pfi);
  }
  Progress progress("fleet-sim", progress_wanted(quiet));  // wall time against the run's length
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
  const nlohmann::json& ag = r["node_agents"];
  if (ag["agent_tick"].get<bool>()) {
    std::printf(
        "nodes: the agent's tick, controller %s (limiter %s, fallbacks %s, budget changes "
        "taken %lld)\n",
        ag["controller"].get<std::string>().c_str(), ag["limiter_actions"].dump().c_str(),
        ag["fallbacks"].dump().c_str(), (long long)ag["budget_changes_taken"].get<int64_t>());
  }
  if (r.contains("dr")) {
    const nlohmann::json& d = r["dr"];
    std::snprintf(
        line, sizeof line,
        "fleet-sim dr (simulated, %s plant): %d nodes, depth %.2f, site loop %s: minutes above "
        "target "
        "%.2f; mean over-cut %.2f %% of baseline; ramp down %s s; weighted performance %.4f "
        "(hold %.4f); after release %.3f of uncapped",
        o.node_plant.c_str(), o.nodes, o.dr_depth, o.site_loop ? "on" : "off",
        d["minutes_above_target"].get<double>(), 100 * d["mean_overcut_frac"].get<double>(),
        d["ramp_down_s"].dump().c_str(), d["weighted_performance"].get<double>(),
        d["weighted_hold_performance"].get<double>(), d["release_recovered_frac"].get<double>());
    std::printf("%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());  // fits 120 columns
    // Issue 45: whether the coordinator judged the target holdable, and the ramp beside its limit.
    if (d["holdable_target_w"].is_number()) {
      const double short_w = d["shortfall_w"].get<double>();
      std::snprintf(line, sizeof line,
                    short_w > 0 ? "target CANNOT be held (coordinator): shortfall %.0f W; the site "
                                  "holds its jobs' tiers down to %.0f W (its floor %.0f W)"
                                : "target holdable (coordinator): shortfall %.0f W; the site holds "
                                  "its jobs' tiers down to %.0f W (its floor %.0f W)",
                    short_w, d["holdable_target_w"].get<double>(), d["site_floor_w"].get<double>());
      std::printf("%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());
    }
    const nlohmann::json& rp = d["ramp"];
    std::snprintf(line, sizeof line,
                  "ramp limit %.1f W/s: split moved at most %.1f W/s down, %.1f W/s up; site "
                  "(10 s means) %.1f W/s down, %.1f W/s up",
                  rp["limit_w_per_s"].get<double>(), rp["split_max_fall_w_per_s"].get<double>(),
                  rp["split_max_rise_w_per_s"].get<double>(),
                  rp["site_max_fall_w_per_s"].get<double>(),
                  rp["site_max_rise_w_per_s"].get<double>());
    std::printf("%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());
    if (d.contains("mix")) {
      std::snprintf(line, sizeof line,
                    "mix %s, allocator %s: over-cut on 1-minute means %.2f %%; every job at or "
                    "above its tier: %s; pauses and resumes %lld",
                    d["mix"].get<std::string>().c_str(), o.allocator.c_str(),
                    100 * d["mean_overcut_1min_frac"].get<double>(),
                    d["all_jobs_at_tier"].get<bool>() ? "yes" : "no",
                    (long long)d["pause_changes"].get<int64_t>());
      std::printf("%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());
    }
    return 0;
  }
  std::snprintf(
      line, sizeof line,
      "fleet-sim: %d nodes x %d GPUs, %.0f s: 30 s windows within budget %d/%d; realloc p99 "
      "%.3f s; takeover %.2f s; assignment writes %.1f/s, registrations %.1f/s; throughput "
      "retained %.3f; late ticks %lld",
      o.nodes, r["gpus_per_node"].get<int>(), o.duration_s,
      r["windows_30s_within_budget"].get<int>(), r["windows_30s"].get<int>(),
      r["realloc_latency_s"]["p99"].get<double>(), r["coordinator_takeover_s"].get<double>(),
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

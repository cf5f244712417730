// flexwatt sim: runs a scenario on the simulator (no controller: knobs and caps stay as the
// scenario sets them) and writes a trace directory. Bit-for-bit deterministic for a seed.
// The run is eval/simulation_run.hpp.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/verb.hpp"
#include "core/format.hpp"
#include "eval/simulation_run.hpp"
#include "sim/scenario.hpp"

namespace fw::cli {
namespace {

int run_sim(int argc, char** argv) {
  CLI::App app(
      "Run a scenario on the simulator (simulated GPUs and jobs, no controller) and\n"
      "write a trace: gpus.csv, jobs.csv, meta.json.\n\n"
      "Example:\n"
      "  flexwatt sim scenarios/grpo-7b-a100.yaml --duration-s 600 --seed 1 \\\n"
      "      --set jobs.0.group_size=4 --out /tmp/trace",
      "sim");
  std::string scenario_path, out_dir;
  double duration_s = -1;
  int64_t seed = 1;
  std::vector<std::string> sets;
  bool json = false;
  app.add_option("scenario", scenario_path, "scenario YAML file")->required();
  app.add_option("--duration-s", duration_s, "simulated seconds (default: the scenario's)");
  app.add_option("--seed", seed, "run seed (default 1)")
      ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)")
      ->take_last();
  app.add_option("--out", out_dir, "trace directory to write")->required();
  app.add_flag("--json", json, "print the summary as JSON");
  // --set may be repeated; take_last would drop earlier ones, so allow multiple.
  app.get_option("--set")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto sc = sim::load_scenario(scenario_path, sets);
  if (!sc.ok()) return fail("sim", sc.status());
  sim::Scenario& s = *sc;
  if (app.count("--duration-s") > 0) {
    // The scenario file's own bounds (duration_s: 0.1..1e8 s), and at least one sample.
    if (!std::isfinite(duration_s) || duration_s < std::max(0.1, s.sample_period_s) ||
        duration_s > 1e8) {
      return fail("sim", Status::InvalidArgument(
                             "--duration-s: must be a finite number of seconds from the sample "
                             "period (and 0.1) to 1e8"));
    }
    s.duration_s = duration_s;
  }
  const bool tty = stderr_is_tty();
  auto summary =
      eval::run_simulation({std::move(s), static_cast<uint64_t>(seed), sets, out_dir},
                           [tty](double t, double duration_s) {
                             if (tty)
                               std::fprintf(stderr, "\rsimulated %.0f / %.0f s", t, duration_s);
                           });
  if (!summary.ok()) return fail("sim", summary.status());
  const nlohmann::json& j = *summary;
  if (tty && j["samples"].get<int64_t>() >= 2000) std::fprintf(stderr, "\n");
  if (json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("simulated %s: %.0f s, seed %llu, %lld samples -> %s\n",
              j["scenario"].get<std::string>().c_str(), j["duration_s"].get<double>(),
              static_cast<unsigned long long>(seed),
              static_cast<long long>(j["samples"].get<int64_t>()), out_dir.c_str());
  std::printf("  mean total power %.1f W (simulated)\n", j["mean_total_power_w"].get<double>());
  for (const auto& job : j["jobs"]) {
    std::printf("  job %-14s tokens %s  steps %.0f\n", job["job"].get<std::string>().c_str(),
                format_si(job["tokens_total"].get<double>()).c_str(),
                job["steps_total"].get<double>());
  }
  return 0;
}

}  // namespace

FW_VERB("sim", "run a scenario on the simulator and write a trace", run_sim);

}  // namespace fw::cli

// flexwatt sim: runs a scenario on the simulator (no controller: knobs and caps stay as the
// scenario sets them) and writes a trace directory. Bit-for-bit deterministic for a seed.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/verb.hpp"
#include "core/version.hpp"
#include "sim/scenario.hpp"
#include "telemetry/trace_writer.hpp"

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
  auto plant = sim::make_cluster(s, static_cast<uint64_t>(seed));
  auto writer = TraceWriter::create(out_dir);
  if (!writer.ok()) return fail("sim", writer.status());

  const int64_t n = static_cast<int64_t>(std::floor(s.duration_s / s.sample_period_s + 1e-9));
  Snapshot snap;
  std::vector<double> sum_w(plant->info().gpus.size(), 0.0);
  for (int64_t k = 1; k <= n; ++k) {
    const double t = static_cast<double>(k) * s.sample_period_s;
    Status st = plant->read(t, snap);
    if (!st.ok()) return fail("sim", st);
    (*writer)->append(snap);
    for (size_t i = 0; i < snap.gpus.size(); ++i) sum_w[i] += snap.gpus[i].power_w;
    if (stderr_is_tty() && k % 2000 == 0) {
      std::fprintf(stderr, "\rsimulated %.0f / %.0f s", t, s.duration_s);
    }
  }
  if (stderr_is_tty() && n >= 2000) std::fprintf(stderr, "\n");

  nlohmann::json meta;
  meta["producer"] = "flexwatt sim (simulated)";
  meta["simulated"] = true;
  meta["version"] = kVersion;
  meta["scenario"] = s.to_json();
  meta["seed"] = seed;
  meta["overrides"] = sets;
  meta["controller"] = "none";
  nlohmann::json models = nlohmann::json::array();
  for (const auto& g : plant->info().gpus) models.push_back(g.model);
  meta["gpu_models"] = models;
  nlohmann::json names = nlohmann::json::array();
  for (const auto& j : plant->info().jobs) names.push_back(j.name);
  meta["job_names"] = names;
  nlohmann::json offsets = nlohmann::json::array();  // resolved phase offsets (fleet.start)
  for (size_t j = 0; j < s.jobs.size(); ++j) offsets.push_back(plant->job_spec(j).start_offset_s);
  meta["job_start_offsets_s"] = offsets;
  Status st = (*writer)->close(meta);
  if (!st.ok()) return fail("sim", st);

  nlohmann::json summary;
  summary["simulated"] = true;
  summary["scenario"] = s.name;
  summary["seed"] = seed;
  summary["duration_s"] = s.duration_s;
  summary["samples"] = n;
  summary["out"] = out_dir;
  double total_mean_w = 0;
  nlohmann::json gpus = nlohmann::json::array();
  for (size_t i = 0; i < sum_w.size(); ++i) {
    const double mean = n > 0 ? sum_w[i] / static_cast<double>(n) : 0;
    total_mean_w += mean;
    gpus.push_back({{"gpu", i}, {"mean_power_w", mean}});
  }
  summary["gpus"] = gpus;
  summary["mean_total_power_w"] = total_mean_w;
  nlohmann::json jobs = nlohmann::json::array();
  for (size_t j = 0; j < snap.jobs.size(); ++j) {
    jobs.push_back({{"job", plant->info().jobs[j].name},
                    {"tokens_total", snap.jobs[j].tokens_total},
                    {"steps_total", snap.jobs[j].steps_total}});
  }
  summary["jobs"] = jobs;
  if (json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    std::printf("simulated %s: %.0f s, seed %llu, %lld samples -> %s\n", s.name.c_str(),
                s.duration_s, static_cast<unsigned long long>(seed), static_cast<long long>(n),
                out_dir.c_str());
    std::printf("  mean total power %.1f W (simulated)\n", total_mean_w);
    for (const auto& j : jobs) {
      std::printf("  job %-14s tokens %.0f  steps %.0f\n", j["job"].get<std::string>().c_str(),
                  j["tokens_total"].get<double>(), j["steps_total"].get<double>());
    }
  }
  return 0;
}

}  // namespace

FW_VERB("sim", "run a scenario on the simulator and write a trace", run_sim);

}  // namespace fw::cli

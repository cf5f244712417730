// flexwatt sweep: a power-cap sweep of one job (simulated from a scenario, or read from a
// measured sweep CSV) and its PFI (experiment/sweep.hpp).

#include "experiment/sweep.hpp"

#include <cstdio>

#include "cli/verb.hpp"
#include "experiment/svg_plot.hpp"

namespace fw::cli {
namespace {

int run_sweep_verb(int argc, char** argv) {
  CLI::App app(
      "Power-cap sweep of a job: P/Pmax, T/Tmax per cap and the PFI (mean over caps of\n"
      "(1 - P/Pmax)/(1 - T/Tmax)). Simulated from a scenario's job, or read from a measured\n"
      "sweep CSV (job,cap_w,power_w,throughput, or the public A100 sweep's columns).\n"
      "Sweeping a real node through the agent is not implemented yet.\n\n"
      "Examples:\n"
      "  flexwatt sweep --scenario scenarios/pretrain-moe-h200x8.yaml --svg sweep.svg\n"
      "  flexwatt sweep --csv data/a100_power_cap_sweep.csv --json",
      "sweep");
  experiment::SweepRequest req;
  std::string svg;
  bool json = false, steady = false;
  app.add_option("--scenario", req.scenario_path, "scenario YAML: sweep one of its jobs");
  app.add_option("--set", req.overrides, "scenario override key=value (repeatable)");
  app.add_option("--job", req.job, "scenario job index (default 0)");
  app.add_option("--caps", req.caps_w, "per-GPU caps, W (default: 6 from the device min to max)")
      ->delimiter(',');
  app.add_option("--warmup-s", req.warmup_s, "simulated seconds before measuring (default 60)");
  app.add_option("--measure-s", req.measure_s, "simulated seconds measured (default 600)");
  app.add_option("--seed", req.seed, "simulation seed (default 1)");
  app.add_flag("--steady", steady,
               "scenario: training phase only (no duty-cycle low phases, no GPU spread), as the "
               "paper measures");
  app.add_option("--csv", req.csv_path, "measured sweep CSV");
  app.add_option("--csv-job", req.csv_job, "CSV: only this job (default: every job)");
  app.add_option("--svg", svg, "write the T/Tmax vs P/Pmax curve as SVG");
  app.add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (req.scenario_path.empty() == req.csv_path.empty()) {
    return fail("sweep", Status::InvalidArgument("give exactly one of --scenario, --csv"));
  }
  if (steady) {
    const std::string j = "jobs." + std::to_string(req.job);
    req.overrides.push_back(j + ".duty={every_s: 0}");
    req.overrides.push_back(j + ".hetero={offset_sd: 0, noise_sd: 0}");
  }
  auto res = experiment::run_sweep(req);
  if (!res.ok()) return fail("sweep", res.status());
  if (!svg.empty()) {
    Status st = experiment::write_text_file(svg, experiment::sweep_svg(*res));
    if (!st.ok()) return fail("sweep", st);
  }
  if (json) {
    std::printf("%s\n", experiment::sweep_json(*res).dump(2).c_str());
  } else {
    std::printf("%s", experiment::sweep_table(*res).c_str());
  }
  return 0;
}

}  // namespace

FW_VERB("sweep", "power-cap sweep of a job (simulated or measured) and its PFI", run_sweep_verb);

}  // namespace fw::cli

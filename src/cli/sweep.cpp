// flexwatt sweep: a power-cap sweep of one job (simulated from a scenario, or read from a
// measured sweep CSV) and its PFI (studies/sweep.hpp).

#include "studies/sweep.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "report/svg_plot.hpp"
#include "studies/agent_sweep.hpp"

namespace fw::cli {
namespace {

int run_sweep_verb(int argc, char** argv) {
  CLI::App app(
      "Power-cap sweep of a job: P/Pmax, T/Tmax per cap and the PFI (mean over caps of\n"
      "(1 - P/Pmax)/(1 - T/Tmax)). Simulated from a scenario's job, or read from a measured\n"
      "sweep CSV (job,cap_w,power_w,throughput, or the public A100 sweep's columns).\n"
      "Or on a live node through its agent (--agent; an admin token, the agent not read_only):\n"
      "each cap set as a static controller, held --dwell-s, measured over whole training steps\n"
      "of the job spanning at least --measure-s (wall s; one step at least), the previous\n"
      "controller put back and the PFI recorded on the agent (docs/agent-api.md).\n"
      "Exit 2: bad usage or input (caps outside the GPUs' range, no such job); 1: a failure at\n"
      "run time (the agent refusing or unreachable, the job stalled, points with no PFI).\n\n"
      "Examples:\n"
      "  flexwatt sweep --scenario scenarios/pretrain-moe-h200x8.yaml --svg sweep.svg\n"
      "  flexwatt sweep --csv data/a100_power_cap_sweep.csv --json\n"
      "  FLEXWATT_TOKEN=... flexwatt sweep --agent /run/flexwatt/agent.sock --job-id job-1 "
      "--caps 400,500,600 --dwell-s 30 --measure-s 60",
      "sweep");
  studies::SweepRequest req;
  std::string svg;
  bool json = false, steady = false, quiet = false;
  app.add_option("--scenario", req.scenario_path, "scenario YAML: sweep one of its jobs");
  app.add_option("--set", req.overrides, "scenario override key=value (repeatable)");
  app.add_option("--job", req.job, "scenario job index (default 0)");
  app.add_option("--caps", req.caps_w, "per-GPU caps, W (default: 6 from the device min to max)")
      ->delimiter(',');
  app.add_option("--warmup-s", req.warmup_s, "simulated seconds before measuring (default 60)")
      ->check(finite_in(0, 1e7));
  app.add_option("--measure-s", req.measure_s,
                 "seconds measured: simulated (default 600); --agent: wall, rounded up to whole "
                 "steps of the job (default 60)")
      ->check(finite_in(0, 1e7, true));
  app.add_option("--seed", req.seed, "simulation seed (default 1)")->check(seed_value());
  app.add_flag("--steady", steady,
               "scenario: training phase only (no duty-cycle low phases, no GPU spread), as the "
               "paper measures");
  app.add_option("--csv", req.csv_path, "measured sweep CSV");
  app.add_option("--csv-job", req.csv_job, "CSV: only this job (default: every job)");
  studies::AgentSweepRequest areq;
  std::string token_file;
  app.add_option("--agent", areq.address,
                 "sweep on a live node through its agent: http://HOST:PORT or a Unix socket path");
  app.add_option("--job-id", areq.job_id, "agent: the registered job (default: the only one)");
  app.add_option("--dwell-s", areq.dwell_s, "agent: wall seconds held before measuring (30)")
      ->check(finite_in(0, 86400));
  app.add_option("--token-file", token_file,
                 "agent: file holding an admin bearer token (default: $FLEXWATT_TOKEN)");
  bool no_publish = false;
  app.add_flag("--no-publish", no_publish, "agent: do not record the PFI on the agent");
  app.add_option("--svg", svg, "write the T/Tmax vs P/Pmax curve as SVG")->check(output_file());
  app.add_flag("--json", json, "print JSON");
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  const int sources = !req.scenario_path.empty() + !req.csv_path.empty() + !areq.address.empty();
  if (sources != 1) {
    return fail("sweep", Status::InvalidArgument("give exactly one of --scenario, --csv, --agent"));
  }
  Result<std::vector<studies::SweepResult>> res = std::vector<studies::SweepResult>{};
  if (!areq.address.empty()) {
    areq.caps_w = req.caps_w;
    areq.measure_s = app.count("--measure-s") ? req.measure_s : 60;
    areq.publish_pfi = !no_publish;
    if (const char* t = std::getenv("FLEXWATT_TOKEN")) areq.token = t;
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      if (!(in >> areq.token)) {
        return fail("sweep", Status::InvalidArgument("--token-file: cannot read " + token_file));
      }
    }
    // The agent sweep's steps are minutes long: each one a line of its own (as before).
    auto r = studies::sweep_through_agent(areq, [quiet](const std::string& m) {
      if (!quiet) std::fprintf(stderr, "sweep: %s\n", m.c_str());
    });
    if (!r.ok()) return fail("sweep", r.status());
    res = std::vector<studies::SweepResult>{std::move(r).value()};
  }
  if (steady) {
    const std::string j = "jobs." + std::to_string(req.job);
    req.overrides.push_back(j + ".duty={every_s: 0}");
    req.overrides.push_back(j + ".hetero={offset_sd: 0, noise_sd: 0}");
  }
  Progress progress("sweep", progress_wanted(quiet));
  req.progress = [&](size_t done, size_t total) { progress.count("caps simulated", done, total); };
  if (areq.address.empty()) res = studies::run_sweep(req);
  progress.finish();
  if (!res.ok()) return fail("sweep", res.status());
  if (!svg.empty()) {
    Status st = write_text_file(svg, studies::sweep_svg(*res));
    if (!st.ok()) return fail("sweep", st);
  }
  if (json) {
    std::printf("%s\n", studies::sweep_json(*res).dump(2).c_str());
  } else {
    std::printf("%s", studies::sweep_table(*res).c_str());
  }
  return 0;
}

}  // namespace

FW_VERB("sweep", "power-cap sweep of a job (simulated or measured) and its PFI", run_sweep_verb);

}  // namespace fw::cli

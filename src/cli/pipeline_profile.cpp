// flexwatt pipeline profile: a stage profile in the planner's format from a running job's
// hook records and the agent's 2 Hz trace, with the cap probes the operator approves
// (docs/pipeline-profile.md).

#include "cli/pipeline_profile.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/format.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/profile_acquisition.hpp"
#include "studies/pipeline_profile_run.hpp"

namespace fw::cli {
namespace {

constexpr const char* kVerb = "pipeline profile";

}  // namespace

void ProfileCommand::add(CLI::App& parent) {
  cmd = parent.add_subcommand(
      "profile",
      "write a stage profile (the planner's format) from a running job: the pipeline hook's "
      "timings (clients/python PipelineTimings) and the agent's 2 Hz trace, with cap probes "
      "run only with --probe");
  cmd->footer(
      "Examples:\n"
      "  flexwatt pipeline profile --timings /tmp/pp-timings --trace /var/lib/flexwatt/trace "
      "-o prof.csv\n"
      "  FLEXWATT_TOKEN=... flexwatt pipeline profile --timings /tmp/pp-timings --trace "
      "/var/lib/flexwatt/trace --probe --agent /run/flexwatt/agent.sock -o prof.csv\n"
      "  flexwatt pipeline profile --sim scenarios/caps-pp4-a100x8.yaml          (the probe plan)\n"
      "  flexwatt pipeline profile --sim scenarios/caps-pp4-a100x8.yaml --probe -o prof.csv "
      "--json\n"
      "Then: flexwatt pipeline plan prof.csv --microbatches M --tp T --gpu G");
  cmd->add_option("--timings", timings,
                  "the hook's JSONL files, one per rank, or folders of *.jsonl")
      ->expected(1, -1);
  cmd->add_option("--trace", trace,
                  "the agent's trace: its trace_dir (seg-*/), a segment folder or a gpus.csv");
  cmd->add_option("-o,--out", out, "write the profile CSV here")->check(output_file());
  cmd->add_option("--gpu", gpu_name,
                  "GPU model: cap range and blocking power (default a100-sxm4-80gb; --sim: the "
                  "scenario's)");
  cmd->add_option("--blocking-w", blocking_w,
                  "power of a waiting GPU (default: the catalogue's for --gpu)")
      ->check(finite_in(0, 2000, true));
  cmd->add_option("--settle-s", settle_s,
                  strprintf("dropped after each cap change (default %.3g, the cap settling time "
                            "`pipeline plan` assumes)",
                            pipeline::kCapSettlingS))
      ->check(finite_in(0, 600));
  cmd->add_option("--resample-mhz", resample_mhz,
                  "interpolate each stage's points onto this clock grid (time linear in "
                  "1/clock, power linear in clock); 0: the measured clocks only (default 15)")
      ->check(finite_in(0, 1000));
  cmd->add_option("--trace-start-unix-s", trace_start_unix_s,
                  "unix time of the trace's time_s 0 (default: its meta.json's start_unix_s)")
      ->check(finite_in(0, 1e11));
  cmd->add_option("--probe-caps", probe_caps, "probe caps, W (default: --probe-levels of them)")
      ->delimiter(',');
  cmd->add_option("--probe-levels", probe_levels,
                  "probe caps evenly from the GPU's maximum down to its minimum (default 12)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--probe-measure-s", probe_measure_s,
                  "seconds measured at each probe cap after settling (default 15)")
      ->check(finite_in(1, 3600));
  cmd->add_flag("--probe", probe,
                "run the probe plan (caps are written: through the agent with --agent, on the "
                "simulated job with --sim); without it the plan and its cost are only printed");
  cmd->add_option("--agent", agent, "the node agent: http://HOST:PORT or a Unix socket path");
  cmd->add_option("--token-file", token_file,
                  "agent: file holding an admin bearer token (default: $FLEXWATT_TOKEN)");
  cmd->add_option("--job-id", job_id, "agent: the registered job (default: the only one)");
  cmd->add_option("--sim", sim_scenario,
                  "a simulated pipeline job (scenario YAML, its first pipeline job): the run, "
                  "its hook records and trace are simulated; prints the plan of this profile "
                  "beside the plan of the job's offline profile");
  cmd->add_option("--record-dir", record_dir,
                  "--sim: write the simulated hook records and trace here (read back from "
                  "there)");
  cmd->add_option("--microbatches", microbatches,
                  "--sim: micro-batches of the plans compared (default: the job's)")
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--json", json, "print JSON");
}

int ProfileCommand::run() const {
  studies::PipelineProfileRequest q;
  q.timings = timings;
  q.trace = trace;
  q.out = out;
  q.gpu_name = gpu_name;
  q.sim_scenario = sim_scenario;
  q.record_dir = record_dir;
  q.agent = agent;
  q.job_id = job_id;
  q.blocking_w = blocking_w;
  q.settle_s = settle_s;
  q.resample_mhz = resample_mhz;
  q.trace_start_unix_s = trace_start_unix_s;
  q.probe_caps = probe_caps;
  q.probe_levels = probe_levels;
  q.probe_measure_s = probe_measure_s;
  q.probe = probe;
  q.microbatches = microbatches;
  if (const char* t = std::getenv("FLEXWATT_TOKEN")) q.token = t;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!(in >> q.token)) {
      return fail(kVerb, Status::InvalidArgument("--token-file: cannot read " + token_file));
    }
  }
  q.progress = [](const std::string& line) { std::fputs(line.c_str(), stderr); };
  auto r = studies::run_pipeline_profile(q);
  if (!r.ok()) return fail(kVerb, r.status());
  std::fputs(json ? (r->json.dump(2) + "\n").c_str() : r->text.c_str(), stdout);
  return 0;
}

}  // namespace fw::cli

// flexwatt pipeline profile: a stage profile in the planner's format from a running job's
// hook records and the agent's 2 Hz trace, with the cap probes the operator approves
// (docs/pipeline-profile.md).

#include "cli/pipeline_profile.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/format.hpp"
#include "hw/gpu_catalog.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/profile_acquisition.hpp"
#include "sim/pipeline_recording.hpp"
#include "sim/scenario.hpp"
#include "studies/agent_sweep.hpp"

namespace fw::cli {
namespace {

constexpr const char* kVerb = "pipeline profile";

Status bad(const std::string& m) { return Status::InvalidArgument(m); }

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
  const bool sim_mode = !sim_scenario.empty();
  if (sim_mode && (!timings.empty() || !trace.empty() || !agent.empty())) {
    return fail(kVerb, bad("--sim runs its own job: no --timings, --trace or --agent with it"));
  }
  if (!sim_mode && (timings.empty() || trace.empty())) {
    return fail(kVerb, bad("give --timings and --trace (a running job), or --sim SCENARIO"));
  }
  if (probe && !sim_mode && agent.empty()) {
    return fail(kVerb, bad("--probe writes caps: give --agent ADDR (or --sim SCENARIO)"));
  }
  // The GPU: the scenario's, else the catalogue's.
  const sim::JobSpec* job = nullptr;
  Result<sim::Scenario> sc = sim::Scenario{};
  double min_cap = 0, max_cap = 0, block = blocking_w;
  if (sim_mode) {
    sc = sim::load_scenario(sim_scenario, {});
    if (!sc.ok()) return fail(kVerb, sc.status());
    for (const auto& j : sc->jobs) {
      if (!job && j.kind == sim::JobKind::kPipeline) job = &j;
    }
    if (!job) return fail(kVerb, bad(sim_scenario + ": jobs: no `kind: pipeline` job"));
    min_cap = job->pipeline.gpu->min_cap_w;
    max_cap = job->pipeline.gpu->max_cap_w;
    if (!(block > 0)) block = job->pipeline.blocking_w;
  } else {
    const hw::GpuCatalogEntry* gpu = hw::find_gpu(gpu_name);
    if (!gpu) {
      return fail(kVerb, bad("--gpu: unknown '" + gpu_name + "' (known: " + hw::gpu_names() + ")"));
    }
    min_cap = gpu->min_cap_w;
    max_cap = gpu->max_cap_w;
    if (!(block > 0)) block = gpu->blocking_w;
    if (!(block > 0)) {
      return fail(kVerb, bad("--blocking-w: no default for '" + gpu_name +
                             "'; give the power of a waiting GPU"));
    }
  }
  pipeline::AcquisitionOptions ao;
  ao.blocking_w = block;
  ao.settle_s = settle_s > 0 ? settle_s : pipeline::kCapSettlingS;
  ao.resample_mhz = resample_mhz;
  nlohmann::json j = nlohmann::json::object();
  std::string text;
  // What is known before probing (a running job: its trace so far).
  auto acquire = [&](const std::vector<std::string>& tpaths,
                     const std::string& trace_path) -> Result<pipeline::AcquiredProfile> {
    FW_ASSIGN_OR_RETURN(auto ranks, pipeline::read_timings(tpaths));
    FW_ASSIGN_OR_RETURN(auto tr, pipeline::read_gpu_samples(trace_path));
    pipeline::AcquisitionOptions o = ao;
    if (trace_start_unix_s >= 0) {
      o.trace_offset_s = trace_start_unix_s;
    } else if (std::isfinite(tr.start_unix_s)) {
      o.trace_offset_s = tr.start_unix_s;
    } else if (!tr.samples.empty() && tr.samples.front().time_s < 1e8) {
      return bad(trace_path +
                 ": the trace's times are relative and it has no meta.json "
                 "start_unix_s: give --trace-start-unix-s");
    }
    return pipeline::acquire_profile(ranks, tr.samples, o);
  };
  double busy_w = 0;
  Result<pipeline::AcquiredProfile> before = Status::Unavailable("not measured");
  if (!sim_mode) {
    before = acquire(timings, trace);
    // Before probing, a short trace may hold no whole window yet: the probes measure anyway.
    if (!before.ok() && !probe) return fail(kVerb, before.status());
    if (before.ok()) busy_w = pipeline::top_compute_w(*before);
  } else {
    std::vector<double> caps(job->pipeline.stages.size() * job->pipeline.dp, max_cap);
    auto it = sim::pipeline_iteration(job->pipeline, caps);
    if (!it.ok()) return fail(kVerb, it.status());
    for (double w : it->compute_w) busy_w = std::max(busy_w, w);
  }
  pipeline::ProbeOptions po;
  po.caps_w = probe_caps.empty() ? pipeline::default_probe_caps(min_cap, max_cap, probe_levels)
                                 : probe_caps;
  po.max_cap_w = max_cap;
  po.settle_s = ao.settle_s;
  po.measure_s = probe_measure_s;
  po.busy_w = busy_w;
  po.blocking_w = block;
  auto plan = pipeline::make_probe_plan(po);
  if (!plan.ok()) return fail(kVerb, plan.status());
  j["probe_plan"] = pipeline::probe_plan_json(*plan);
  const bool need_probes = sim_mode || !before.ok() || pipeline::fewest_clocks(*before) < 2;
  if (!probe || sim_mode) text += pipeline::format_probe_plan(*plan);
  if (!probe) {
    j["probed"] = false;
    if (need_probes) {
      text += sim_mode ? "not run: add --probe to run it on the simulated job\n"
                       : "the trace holds one clock for some stage: the planner needs more. "
                         "Not run: add --probe --agent ADDR to run it\n";
    }
  }
  Result<pipeline::AcquiredProfile> acq = std::move(before);
  if (probe && !sim_mode) {
    studies::AgentSweepRequest req;
    req.address = agent;
    req.job_id = job_id;
    req.caps_w = po.caps_w;
    req.caps_w.push_back(max_cap);
    req.dwell_s = ao.settle_s;
    req.measure_s = probe_measure_s;
    req.publish_pfi = false;
    if (const char* t = std::getenv("FLEXWATT_TOKEN")) req.token = t;
    if (!token_file.empty()) {
      std::ifstream in(token_file);
      if (!(in >> req.token)) return fail(kVerb, bad("--token-file: cannot read " + token_file));
    }
    std::fputs(pipeline::format_probe_plan(*plan).c_str(), stderr);
    auto r = studies::sweep_through_agent(
        req, [](const std::string& m) { std::fprintf(stderr, "probe: %s\n", m.c_str()); });
    // Any failure fails the command (the previous controller is back): what the trace holds
    // can be profiled by running again without --probe.
    if (!r.ok()) return fail(kVerb, r.status());
    j["probed"] = true;
    acq = acquire(timings, trace);
  } else if (probe && sim_mode) {
    sim::PipelineRecordingOptions ro;
    ro.noise_w = sc->sim.noise_w;
    auto rec = sim::record_probe_run(job->pipeline, *plan, ro);
    if (!rec.ok()) return fail(kVerb, rec.status());
    if (!record_dir.empty()) {
      if (Status st = sim::write_recording(record_dir, *rec, ro.start_unix_s); !st.ok()) {
        return fail(kVerb, st);
      }
      acq = acquire({record_dir}, record_dir);  // through the files, as on a node
    } else {
      pipeline::AcquisitionOptions o = ao;
      o.trace_offset_s = ro.start_unix_s;
      acq = pipeline::acquire_profile(rec->ranks, rec->samples, o);
    }
    j["probed"] = true;
  }
  if (sim_mode && !probe) {
    std::fputs(json ? (j.dump(2) + "\n").c_str() : text.c_str(), stdout);
    return 0;
  }
  if (!acq.ok()) return fail(kVerb, acq.status());
  text += pipeline::format_acquisition(*acq);
  j["acquisition"] = pipeline::acquisition_json(*acq);
  if (!out.empty()) {
    if (Status st = pipeline::write_stage_profile(out, acq->profile); !st.ok()) {
      return fail(kVerb, st);
    }
    j["profile"] = out;
    text += "wrote " + out + "\n";
  }
  if (sim_mode) {  // the check: this profile's plan against the offline profile's
    auto chk = sim::check_against_offline(job->pipeline, acq->profile, microbatches);
    if (!chk.ok()) return fail(kVerb, chk.status());
    const double a = chk->acquired_energy_saved, o = chk->offline_energy_saved;
    const int mb = chk->microbatches;
    j["simulated_check"] = {{"offline_energy_saved", o},
                            {"acquired_energy_saved", a},
                            {"gap_points", 100 * (o - a)},
                            {"microbatches", mb}};
    text += strprintf(
        "simulated check (pipeline plan's defaults, %d micro-batches): the offline profile's plan "
        "saves %.2f %%, this profile's %.2f %% (gap %.2f points)\n",
        mb, 100 * o, 100 * a, 100 * (o - a));
  }
  std::fputs(json ? (j.dump(2) + "\n").c_str() : text.c_str(), stdout);
  return 0;
}

}  // namespace fw::cli

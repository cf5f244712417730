#include "studies/pipeline_profile_run.hpp"

#include <algorithm>
#include <cmath>

#include "core/format.hpp"
#include "hw/gpu_catalog.hpp"
#include "pipeline/planner.hpp"
#include "sim/pipeline_recording.hpp"
#include "sim/scenario.hpp"
#include "studies/agent_sweep.hpp"

namespace fw::studies {
namespace {

Status bad(const std::string& m) { return Status::InvalidArgument(m); }

}  // namespace

Result<PipelineProfileResult> run_pipeline_profile(const PipelineProfileRequest& q) {
  const bool sim_mode = !q.sim_scenario.empty();
  if (sim_mode && (!q.timings.empty() || !q.trace.empty() || !q.agent.empty())) {
    return bad("--sim runs its own job: no --timings, --trace or --agent with it");
  }
  if (!sim_mode && (q.timings.empty() || q.trace.empty())) {
    return bad("give --timings and --trace (a running job), or --sim SCENARIO");
  }
  if (q.probe && !sim_mode && q.agent.empty()) {
    return bad("--probe writes caps: give --agent ADDR (or --sim SCENARIO)");
  }
  // The GPU: the scenario's, else the catalogue's.
  const sim::JobSpec* job = nullptr;
  Result<sim::Scenario> sc = sim::Scenario{};
  double min_cap = 0, max_cap = 0, block = q.blocking_w;
  if (sim_mode) {
    sc = sim::load_scenario(q.sim_scenario, {});
    if (!sc.ok()) return sc.status();
    for (const auto& j : sc->jobs) {
      if (!job && j.kind == sim::JobKind::kPipeline) job = &j;
    }
    if (!job) return bad(q.sim_scenario + ": jobs: no `kind: pipeline` job");
    min_cap = job->pipeline.gpu->min_cap_w;
    max_cap = job->pipeline.gpu->max_cap_w;
    if (!(block > 0)) block = job->pipeline.blocking_w;
  } else {
    const hw::GpuCatalogEntry* gpu = hw::find_gpu(q.gpu_name);
    if (!gpu) {
      return bad("--gpu: unknown '" + q.gpu_name + "' (known: " + hw::gpu_names() + ")");
    }
    min_cap = gpu->min_cap_w;
    max_cap = gpu->max_cap_w;
    if (!(block > 0)) block = gpu->blocking_w;
    if (!(block > 0)) {
      return bad("--blocking-w: no default for '" + q.gpu_name +
                 "'; give the power of a waiting GPU");
    }
  }
  pipeline::AcquisitionOptions ao;
  ao.blocking_w = block;
  ao.settle_s = q.settle_s > 0 ? q.settle_s : pipeline::kCapSettlingS;
  ao.resample_mhz = q.resample_mhz;
  nlohmann::json j = nlohmann::json::object();
  std::string text;
  // What is known before probing (a running job: its trace so far).
  auto acquire = [&](const std::vector<std::string>& tpaths,
                     const std::string& trace_path) -> Result<pipeline::AcquiredProfile> {
    FW_ASSIGN_OR_RETURN(auto ranks, pipeline::read_timings(tpaths));
    FW_ASSIGN_OR_RETURN(auto tr, pipeline::read_gpu_samples(trace_path));
    pipeline::AcquisitionOptions o = ao;
    if (q.trace_start_unix_s >= 0) {
      o.trace_offset_s = q.trace_start_unix_s;
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
    before = acquire(q.timings, q.trace);
    // Before probing, a short trace may hold no whole window yet: the probes measure anyway.
    if (!before.ok() && !q.probe) return before.status();
    if (before.ok()) busy_w = pipeline::top_compute_w(*before);
  } else {
    std::vector<double> caps(job->pipeline.stages.size() * job->pipeline.dp, max_cap);
    auto it = sim::pipeline_iteration(job->pipeline, caps);
    if (!it.ok()) return it.status();
    for (double w : it->compute_w) busy_w = std::max(busy_w, w);
  }
  pipeline::ProbeOptions po;
  po.caps_w = q.probe_caps.empty() ? pipeline::default_probe_caps(min_cap, max_cap, q.probe_levels)
                                   : q.probe_caps;
  po.max_cap_w = max_cap;
  po.settle_s = ao.settle_s;
  po.measure_s = q.probe_measure_s;
  po.busy_w = busy_w;
  po.blocking_w = block;
  auto plan = pipeline::make_probe_plan(po);
  if (!plan.ok()) return plan.status();
  j["probe_plan"] = pipeline::probe_plan_json(*plan);
  const bool need_probes = sim_mode || !before.ok() || pipeline::fewest_clocks(*before) < 2;
  if (!q.probe || sim_mode) text += pipeline::format_probe_plan(*plan);
  if (!q.probe) {
    j["probed"] = false;
    if (need_probes) {
      text += sim_mode ? "not run: add --probe to run it on the simulated job\n"
                       : "the trace holds one clock for some stage: the planner needs more. "
                         "Not run: add --probe --agent ADDR to run it\n";
    }
  }
  Result<pipeline::AcquiredProfile> acq = std::move(before);
  if (q.probe && !sim_mode) {
    studies::AgentSweepRequest req;
    req.address = q.agent;
    req.job_id = q.job_id;
    req.caps_w = po.caps_w;
    req.caps_w.push_back(max_cap);
    req.dwell_s = ao.settle_s;
    req.measure_s = q.probe_measure_s;
    req.publish_pfi = false;
    req.require_pfi = false;  // the probes apply caps; the profile's points are the trace's
    req.token = q.token;
    if (q.progress) q.progress(pipeline::format_probe_plan(*plan));
    auto r = sweep_through_agent(req, [&](const std::string& m) {
      if (q.progress) q.progress("probe: " + m + "\n");
    });
    // Any failure fails the command (the previous controller is back): what the trace holds
    // can be profiled by running again without --probe.
    if (!r.ok()) return r.status();
    j["probed"] = true;
    acq = acquire(q.timings, q.trace);
  } else if (q.probe && sim_mode) {
    sim::PipelineRecordingOptions ro;
    ro.noise_w = sc->sim.noise_w;
    auto rec = sim::record_probe_run(job->pipeline, *plan, ro);
    if (!rec.ok()) return rec.status();
    if (!q.record_dir.empty()) {
      if (Status st = sim::write_recording(q.record_dir, *rec, ro.start_unix_s); !st.ok()) {
        return st;
      }
      acq = acquire({q.record_dir}, q.record_dir);  // through the files, as on a node
    } else {
      pipeline::AcquisitionOptions o = ao;
      o.trace_offset_s = ro.start_unix_s;
      acq = pipeline::acquire_profile(rec->ranks, rec->samples, o);
    }
    j["probed"] = true;
  }
  if (sim_mode && !q.probe) {
    return PipelineProfileResult{j, text};
  }
  if (!acq.ok()) return acq.status();
  text += pipeline::format_acquisition(*acq);
  j["acquisition"] = pipeline::acquisition_json(*acq);
  if (!q.out.empty()) {
    if (Status st = pipeline::write_stage_profile(q.out, acq->profile); !st.ok()) {
      return st;
    }
    j["profile"] = q.out;
    text += "wrote " + q.out + "\n";
  }
  if (sim_mode) {  // the check: this profile's plan against the offline profile's
    auto chk = sim::check_against_offline(job->pipeline, acq->profile, q.microbatches);
    if (!chk.ok()) return chk.status();
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
  return PipelineProfileResult{j, text};
}

}  // namespace fw::studies

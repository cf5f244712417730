#include "sim/pipeline_scenario.hpp"

#include <filesystem>

#include "pipeline/planner.hpp"
#include "sim/pipeline_profile.hpp"

namespace fw::sim {

#define FW_GET(var, expr) FW_ASSIGN_OR_RETURN(var, expr)

const std::vector<std::string>& pipeline_job_keys() {
  static const std::vector<std::string> k = {
      "stages", "stage_work", "profile",         "load",          "microbatches",
      "dp",     "blocking_w", "tokens_per_iter", "cap_averaging", "stragglers"};
  return k;
}

namespace {

Status parse_stragglers(const ConfigNode& n, int stages, int dp, PipelineJobSpec& p) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_sequence())
    return n.error("expected a list of {pipeline, stage, factor, start_s, end_s}");
  for (size_t i = 0; i < n.size(); ++i) {
    const ConfigNode e = n.at(i);
    FW_RETURN_IF_ERROR(e.reject_unknown({"pipeline", "stage", "factor", "start_s", "end_s"}));
    PipelineStraggler st;
    FW_GET(int64_t pl, e.get_int("pipeline", 0, 0, dp - 1));
    FW_GET(int64_t sg, e.get_int("stage", -1, -1, stages - 1));
    if (!e.has("factor")) return e.error("missing key 'factor'");
    FW_GET(st.factor, e.get_double("factor", 1, 1, 100));
    FW_GET(st.start_s, e.get_double("start_s", 0, 0, 1e9));
    FW_GET(st.end_s, e.get_double("end_s", 1e300, 0, 1e300));
    if (st.end_s <= st.start_s) return e["end_s"].error("must be after start_s");
    st.pipeline = static_cast<int>(pl);
    st.stage = static_cast<int>(sg);
    p.stragglers.push_back(st);
  }
  return Status::Ok();
}

}  // namespace

Status parse_pipeline_job(const ConfigNode& n, const ClusterGpu& gpu, JobSpec& j) {
  PipelineJobSpec& p = j.pipeline;
  p.gpu = gpu.preset;
  p.tp = 1;
  if (n.has("tp")) return n["tp"].error("a pipeline job has one GPU per stage (no tp key)");
  if (n.has("start_offset_s")) return n["start_offset_s"].error("not supported by pipeline jobs");
  if (n.has("hetero")) return n["hetero"].error("not supported by pipeline jobs");
  j.hetero = {};
  j.hetero.offset_sd_frac = 0;
  j.hetero.noise_sd_w = 0;
  const bool has_work = n.has("stage_work"), has_profile = n.has("profile");
  if (has_work == has_profile) return n.error("a pipeline job needs one of stage_work, profile");
  if (has_profile) {
    FW_GET(j.pipeline_profile, n.get_string("profile", ""));
    std::filesystem::path path(j.pipeline_profile);
    if (path.is_relative()) path = std::filesystem::path(n.file()).parent_path() / path;
    auto prof = pipeline::read_stage_profile(path.string());
    if (!prof.ok()) return n["profile"].error(prof.status().message());
    FW_GET(StageWorkFit fit, stage_work_from_profile(*prof, *gpu.preset));
    p.stages = fit.stages;
    p.stage_loads = fit.loads;
    if (n.has("load")) return n["load"].error("the profile gives the loads (no load key)");
    if (n.has("stages")) {
      FW_GET(int64_t s, n.get_int("stages", 1, 1, 1024));
      if (s != static_cast<int64_t>(p.stages.size()))
        return n["stages"].error("the profile has " + std::to_string(p.stages.size()) + " stages");
    }
  } else {
    if (!n.has("stages")) return n.error("missing key 'stages' (with stage_work)");
    FW_GET(int64_t s, n.get_int("stages", 1, 1, 1024));
    const ConfigNode w = n["stage_work"];
    if (!w.is_sequence() || w.size() != static_cast<size_t>(s)) {
      return w.error("expected " + std::to_string(s) + " [forward_s, backward_s] entries");
    }
    for (size_t i = 0; i < w.size(); ++i) {
      const ConfigNode e = w.at(i);
      if (!e.is_sequence() || e.size() != 2) return e.error("expected [forward_s, backward_s]");
      FW_GET(double f, e.at(0).as_double(1e-6, 3600));
      FW_GET(double b, e.at(1).as_double(1e-6, 3600));
      p.stages.push_back({f, b});
    }
    const PretrainModel* dense = find_pretrain_model("dense-pt");
    const Load def = dense ? dense->load[0] : Load{1, 0.3, 0.9};
    const ConfigNode l = n["load"];
    if (l.defined()) FW_RETURN_IF_ERROR(l.reject_unknown({"sm", "mem", "compute_bound"}));
    FW_GET(p.load.u, l.get_double("sm", def.u, 0, 2));
    FW_GET(p.load.m, l.get_double("mem", def.m, 0, 4));
    FW_GET(p.load.c, l.get_double("compute_bound", def.c, 0, 1));
  }
  const int S = static_cast<int>(p.stages.size());
  FW_GET(int64_t mb, n.get_int("microbatches", 12, 1, 100000));
  FW_GET(int64_t dp, n.get_int("dp", 1, 1, 4096));
  p.microbatches = static_cast<int>(mb);
  p.dp = static_cast<int>(dp);
  if (static_cast<int64_t>(j.gpus.size()) != S * dp) {
    return n["gpus"].error("a pipeline job needs stages × dp = " + std::to_string(S * dp) +
                           " GPUs, has " + std::to_string(j.gpus.size()));
  }
  const double def_block = gpu.preset->blocking_w;  // hw/gpu_catalog.hpp (0: unknown)
  if (def_block <= 0 && !n.has("blocking_w")) {
    return n.error("missing key 'blocking_w' (no default for " + std::string(gpu.preset->name) +
                   ")");
  }
  FW_GET(p.blocking_w, n.get_double("blocking_w", def_block, 0, gpu.preset->tdp_w));
  FW_GET(j.pipeline_tokens_per_iter, n.get_double("tokens_per_iter", 1536.0 * 2048, 1, 1e12));
  FW_GET(std::string avg, n.get_string("cap_averaging", "iteration"));
  if (avg != "iteration" && avg != "compute")
    return n["cap_averaging"].error("'" + avg + "' is not one of iteration, compute");
  p.average_over_iteration = avg == "iteration";
  FW_RETURN_IF_ERROR(parse_stragglers(n["stragglers"], S, p.dp, p));
  j.preset = has_profile ? "profile" : "stage_work";
  return Status::Ok();
}

nlohmann::json pipeline_job_json(const JobSpec& j) {
  const PipelineJobSpec& p = j.pipeline;
  nlohmann::json o = {{"kind", "pipeline"},
                      {"stages", p.stages.size()},
                      {"microbatches", p.microbatches},
                      {"dp", p.dp},
                      {"blocking_w", p.blocking_w},
                      {"tokens_per_iter", j.pipeline_tokens_per_iter},
                      {"cap_averaging", p.average_over_iteration ? "iteration" : "compute"},
                      {"knobs", nlohmann::json::object()}};
  if (!j.pipeline_profile.empty()) o["profile"] = j.pipeline_profile;
  nlohmann::json w = nlohmann::json::array();
  for (const auto& s : p.stages) w.push_back({s.forward_s, s.backward_s});
  o["stage_work"] = w;
  nlohmann::json st = nlohmann::json::array();
  for (const auto& s : p.stragglers) {
    st.push_back({{"pipeline", s.pipeline},
                  {"stage", s.stage},
                  {"factor", s.factor},
                  {"start_s", s.start_s},
                  {"end_s", s.end_s}});
  }
  o["stragglers"] = st;
  return o;
}

#undef FW_GET

}  // namespace fw::sim

#pragma once
// `kind: pipeline` jobs in scenario files (docs/simulator.md "Pipeline jobs"): a 1F1B
// pipeline-parallel job with dp data-parallel pipelines, one simulated GPU per stage of each
// pipeline (gpus = stages · dp, gpus[p · stages + s]). Its keys are declared here, apart from
// the other job kinds' (sim/scenario.cpp calls these for kind pipeline only):
//   stages           number of stages (required with stage_work; taken from the profile else)
//   stage_work       [[forward_s, backward_s], ...] one micro-batch at f_max per stage, or
//   profile          a stage profile (pipeline/stage_profile.hpp), path relative to the
//                    scenario file; its work and loads come from stage_work_from_profile()
//   load             {sm, mem, compute_bound} of every stage (stage_work only; default the
//                    dense-pt workload's forward load)
//   microbatches     per pipeline per iteration (12)
//   dp               data-parallel pipelines (1)
//   blocking_w       a waiting GPU's power (default: the catalogue's, hw::GpuCatalogEntry::
//                    blocking_w — the Perseus notebook's figure for A100 and A40; required
//                    for GPUs without one)
//   tokens_per_iter  trained tokens per iteration, whole job (1536 · 2048)
//   cap_averaging    iteration | compute: what the cap bounds (PipelineJobSpec)
//   stragglers       [{pipeline, stage (-1: all), factor, start_s, end_s}, ...]
// Errors name file:line: field.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/status.hpp"
#include "sim/cluster.hpp"
#include "sim/workload.hpp"

namespace fw::sim {

// The keys a pipeline job accepts beside the common job keys.
const std::vector<std::string>& pipeline_job_keys();

// Parses job entry `n` (kind pipeline) on GPUs of model `gpu`; j.gpus already set.
Status parse_pipeline_job(const ConfigNode& n, const ClusterGpu& gpu, JobSpec& j);

// The parsed parameters for meta.json.
nlohmann::json pipeline_job_json(const JobSpec& j);

}  // namespace fw::sim

#pragma once
// The run of `flexwatt pipeline profile` (docs/pipeline-profile.md): a stage profile in the
// planner's format from a running job's hook records and the agent's 2 Hz trace, with the cap
// probes the operator approves (through the agent's API), or from a simulated pipeline job
// (--sim: its hook records and trace simulated, the acquired profile's plan checked against
// the job's offline profile's). The CLI (cli/pipeline_profile.cpp) only parses flags and prints.
//
// Contract: InvalidArgument naming the flag for flags that do not go together (--sim with
// --timings, --trace or --agent; neither a running job nor --sim; --probe on a running job
// without --agent), an unknown --gpu or one without a default blocking power; the readers'
// errors (file:line: field) as they come; any failure of the probes (the agent's previous
// controller is back). The result: the text the command prints and its JSON (probe_plan,
// probed, acquisition, profile, simulated_check). `progress` (optional) gets the probe plan
// and the probes' progress lines while they run. Writes the profile to `out` when given.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "pipeline/profile_acquisition.hpp"

namespace fw::studies {

struct PipelineProfileRequest {
  std::vector<std::string> timings;  // the hook's JSONL files or folders
  std::string trace, out, gpu_name = "a100-sxm4-80gb", sim_scenario, record_dir;
  std::string agent, token, job_id;  // --probe through the agent
  double blocking_w = 0, settle_s = 0, resample_mhz = pipeline::kDefaultResampleMhz;
  double trace_start_unix_s = -1;
  std::vector<double> probe_caps;
  int probe_levels = pipeline::kDefaultProbeLevels;
  double probe_measure_s = pipeline::kDefaultProbeMeasureS;
  bool probe = false;
  int microbatches = 0;  // --sim check: the plan's micro-batches (0: the job's)
  std::function<void(const std::string&)> progress;
};

struct PipelineProfileResult {
  nlohmann::json json;
  std::string text;
};

Result<PipelineProfileResult> run_pipeline_profile(const PipelineProfileRequest& q);

}  // namespace fw::studies

#pragma once
// `flexwatt pipeline profile`: the subcommand's flags and its run (cli/pipeline.cpp registers
// it under the `pipeline` verb). The run is studies/pipeline_profile_run.hpp; this file parses
// the flags and prints.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "pipeline/profile_acquisition.hpp"

namespace fw::cli {

struct ProfileCommand {
  CLI::App* cmd = nullptr;
  std::vector<std::string> timings;
  std::string trace, out, gpu_name = "a100-sxm4-80gb", sim_scenario, record_dir, agent, token_file,
                          job_id;
  double blocking_w = 0, settle_s = 0, resample_mhz = pipeline::kDefaultResampleMhz,
         trace_start_unix_s = -1;
  std::vector<double> probe_caps;
  int probe_levels = pipeline::kDefaultProbeLevels;
  double probe_measure_s = pipeline::kDefaultProbeMeasureS;
  bool probe = false, json = false;
  int microbatches = 0;  // --sim report: the plan's micro-batches (default: the job's)

  void add(CLI::App& parent);
  int run() const;
};

}  // namespace fw::cli

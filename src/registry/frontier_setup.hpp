#pragma once
// The `frontier` controller's configuration for a simulated pipeline job
// (sim/pipeline_scenario.hpp): its shape (stages, micro-batches, dp, blocking power, what the cap
// bounds) from the job's spec, and its offline profile measured on the simulator at every clock
// (sim::profile_from_spec: what Perseus measures on hardware before it plans). Used by the
// registry's `frontier` entry (profile=offline) and by `flexwatt caps`.

#include "controllers/frontier_controller.hpp"
#include "core/status.hpp"
#include "sim/workload.hpp"

namespace fw::registry {

// InvalidArgument when job is not a pipeline job.
Result<FrontierConfig> frontier_config_for_job(const sim::JobSpec& job, int job_index);

// What the offline profile costs on hardware: stages × clocks × 2 instructions measured.
int frontier_profile_points(const FrontierConfig& cfg);

}  // namespace fw::registry

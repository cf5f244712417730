#include "registry/frontier_setup.hpp"

#include "sim/pipeline_profile.hpp"

namespace fw::registry {

Result<FrontierConfig> frontier_config_for_job(const sim::JobSpec& job, int job_index) {
  if (job.kind != sim::JobKind::kPipeline) {
    return Status::InvalidArgument("frontier: job " + std::to_string(job_index) + " (" + job.name +
                                   ") is not a pipeline job");
  }
  FrontierConfig c;
  FW_ASSIGN_OR_RETURN(c.profile, sim::profile_from_spec(job.pipeline));
  c.job = job_index;
  c.microbatches = job.pipeline.microbatches;
  c.dp = job.pipeline.dp;
  c.blocking_w = job.pipeline.blocking_w;
  c.margin_frac = job.pipeline.margin_frac;
  c.average_over_iteration = job.pipeline.average_over_iteration;
  return c;
}

int frontier_profile_points(const FrontierConfig& cfg) {
  int n = 0;
  for (const auto& s : cfg.profile.stages)
    n += static_cast<int>(s[0].points.size() + s[1].points.size());
  return n;
}

}  // namespace fw::registry

#pragma once
// Stage profiles (pipeline/stage_profile.hpp) and the simulator's pipeline work
// (sim/pipeline_job.hpp), both ways. Everything here is simulated or fitted.
//
// - stage_work_from_profile(): a measured profile → per-stage work at f_max and a per-stage
//   Load of the GPU model. Time: t(x) = t1 · (c/x + 1 − c) (gpu_model.hpp s(c, x)), c by least
//   squares over both instructions' points (clamped to [0, 1]), t1 extrapolated to x = 1 when
//   the profile's top clock is below the preset's f_max. Power: E/t at each point fitted by
//   P(x) of gpu_model.hpp, linear least squares in (u, m) ≥ 0 with c fixed. x = f / f_max.
// - profile_from_spec(): the offline profile of a simulated job — each stage's forward and
//   backward time and energy at every clock from f_max down to f_min in `step_mhz` steps, from
//   the same GPU model (what Perseus measures on hardware before it plans).

#include <vector>

#include "core/status.hpp"
#include "pipeline/stage_profile.hpp"
#include "sim/pipeline_job.hpp"

namespace fw::sim {

struct StageWorkFit {
  std::vector<PipelineStageWork> stages;
  std::vector<Load> loads;
  double max_time_err = 0, max_power_err = 0;  // |relative|, over the profile's points
};

Result<StageWorkFit> stage_work_from_profile(const pipeline::StageProfile& profile,
                                             const GpuPreset& gpu);

// One pipeline of `spec` (its stage loads or load), one GPU per stage.
Result<pipeline::StageProfile> profile_from_spec(const PipelineJobSpec& spec, double step_mhz = 15);

}  // namespace fw::sim

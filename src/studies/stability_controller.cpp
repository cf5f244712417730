#include "studies/stability_controller.hpp"

#include "control/controller_spec.hpp"
#include "registry/controller_registry.hpp"
#include "sim/site_plant.hpp"

namespace fw::studies {

Result<StabilityControllerArm> controller_arm_from_spec(const StabilityScenario& s,
                                                        const std::string& spec,
                                                        double sample_period_s, int calib_seeds) {
  FW_ASSIGN_OR_RETURN(ControllerSpec cs, parse_controller_spec(spec));
  const sim::SiteSpec site = s.site;
  const sim::SitePlant probe(site, sim::SiteMitigations{}, 0);
  registry::ControllerEnv env;
  env.info = probe.info();
  env.budget.entries.push_back({0, Budget{env.info.nameplate_w(), BudgetScope::kNode, 30}});
  env.sample_period_s = sample_period_s;
  env.duration_s = site.duration_s;
  env.make_plant = [site](uint64_t seed) -> std::unique_ptr<Plant> {
    return std::make_unique<sim::SitePlant>(site, sim::SiteMitigations{}, seed);
  };
  for (int i = 0; i < calib_seeds; ++i)
    env.calibration_seeds.push_back(kStabilityCalibrationSeed0 + i);
  auto prepared = registry::prepare_controller(cs, env);
  if (!prepared.ok()) return prepared.status().with_context("--controller " + spec);
  StabilityControllerArm arm;
  arm.name = cs.name;
  arm.spec = spec;
  arm.sample_period_s = sample_period_s;
  arm.make = prepared->make;
  return arm;
}

Result<StabilityControllerArm> stabilize_arm(const StabilityScenario& s, int calib_seeds) {
  if (s.site.smoothing == nullptr) {
    return Status::InvalidArgument("--arms: stabilize: GPU model " + s.site.gpu_model +
                                   " has no power smoothing (site.smoothing_model)");
  }
  if (s.search.stabilize.empty()) {
    return Status::InvalidArgument("--arms: stabilize: search.stabilize lists no setting");
  }
  StabilityControllerArm arm;
  arm.name = "stabilize";
  arm.sample_period_s = s.site.output_period_s;
  for (const std::string& spec : s.search.stabilize) {
    FW_ASSIGN_OR_RETURN(StabilityControllerArm one,
                        controller_arm_from_spec(s, spec, arm.sample_period_s, calib_seeds));
    arm.candidates.push_back({spec, one.make});
  }
  arm.spec = arm.candidates.front().spec;
  arm.make = arm.candidates.front().make;
  return arm;
}

}  // namespace fw::studies

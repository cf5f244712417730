#include "studies/stability_controller.hpp"

#include "control/controller_spec.hpp"
#include "controllers/registry/controller_registry.hpp"
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

}  // namespace fw::studies

#pragma once
// A controller arm of the power-stabilisation study from a registry spec ("static:cap=600",
// later the feed-forward controller): the controller is prepared against sim::SitePlant (its
// plant info, a fresh site plant per seed for any calibration it does, on the calibration seeds
// 1000000+) and runs in the control loop over the site (studies/stability_study.hpp).

#include <string>

#include "core/status.hpp"
#include "studies/stability_study.hpp"

namespace fw::studies {

// InvalidArgument naming the spec for an unknown controller or option (the registry's message).
Result<StabilityControllerArm> controller_arm_from_spec(const StabilityScenario& s,
                                                        const std::string& spec,
                                                        double sample_period_s, int calib_seeds);

// The study's `stabilize` arm: the feed-forward stabilising controller
// (controllers/stabilizing_controller.hpp) with the scenario's search.stabilize specs as its
// candidates (chosen on the calibration seeds), ticking at the site meter's period.
// InvalidArgument when the site has no smoothing model or no spec is listed.
Result<StabilityControllerArm> stabilize_arm(const StabilityScenario& s, int calib_seeds);

}  // namespace fw::studies

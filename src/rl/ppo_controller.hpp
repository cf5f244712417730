#pragma once
// PpoController: the deployed PPO meta-controller (`ppo:PATH` in `flexwatt eval`). Every
// period_s it builds build_plant_features() for each job that exposes a knob, asks the
// policy for its deterministic action (argmax per knob) and moves the knobs one rung
// (rl/plant_features.hpp). The SafetyLimiter stands between it and the plant, as for every
// controller.
//
// Allocation: decide() allocates nothing once reset() has sized the buffers (tested);
// update() returns decide()'s Command by value, as the Controller interface requires, which
// copies its per-job knob vector (one allocation per decision, outside the policy path).

#include <memory>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "rl/plant_features.hpp"
#include "rl/policy.hpp"

namespace fw::rl {

class PpoController : public Controller {
 public:
  // Checks that the policy's observation and action specs are the ones this flexwatt
  // builds (names, in order); the message names the first difference. period_s <= 0 takes
  // the policy's metadata.decision_period_s (5 s when absent).
  static Result<std::unique_ptr<PpoController>> create(Policy policy, double period_s = 0);
  // Also checks that `info` has a job exposing a knob the policy drives.
  static Status check_plant(const Policy& policy, const PlantInfo& info);

  std::string name() const override { return "ppo"; }
  double period_s() const override { return period_s_; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override { return decide(obs); }
  // The command for this decision; valid until the next call. REQUIRES: reset() first.
  const Command& decide(const Observation& obs);

  const Policy& policy() const { return policy_; }

 private:
  PpoController(Policy policy, double period_s, KnobActionMode mode);
  Policy policy_;
  double period_s_;
  KnobActionMode mode_;
  Command cmd_;
  std::vector<double> obs_buf_, act_buf_;
};

}  // namespace fw::rl

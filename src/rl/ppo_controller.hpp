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
  // The knob subset comes from the action spec (plant_action_layout()); the decision rule
  // from metadata.decide_on ("period", the default, or "phase" with
  // metadata.max_decision_period_s, default 60): with "phase" the controller is polled every
  // sample (period_s() is tiny) and decides for a job only where PlantEnv would — at a phase
  // boundary at least period_s after its last decision, or max period after it.
  static Result<std::unique_ptr<PpoController>> create(Policy policy, double period_s = 0);
  // Also checks that `info` has a job exposing a knob the policy drives.
  static Status check_plant(const Policy& policy, const PlantInfo& info);

  std::string name() const override { return "ppo"; }
  double period_s() const override {
    return decide_on_ == DecideOn::kPhase ? kPollPeriodS : period_s_;
  }
  DecideOn decide_on() const { return decide_on_; }
  unsigned knob_mask() const { return mask_; }
  // Decisions taken for job `job` since reset() (tests).
  int decisions(size_t job) const { return job < decisions_.size() ? decisions_[job] : 0; }
  double last_decision_s(size_t job) const {
    return job < last_decision_s_.size() ? last_decision_s_[job] : kUnset;
  }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override { return decide(obs); }
  // The action factors of its policy (factor q is kActuatorTable row q).
  ActuatorSet claims() const override { return ActuatorSet(mask_); }
  // The command for this decision; valid until the next call. REQUIRES: reset() first.
  const Command& decide(const Observation& obs);

  const Policy& policy() const { return policy_; }

 private:
  // Rounds up to one sample in ControlLoop, so the controller sees every sample.
  static constexpr double kPollPeriodS = 1e-6;
  PpoController(Policy policy, double period_s, PlantActionLayout layout, DecideOn decide_on,
                double max_period_s);
  Policy policy_;
  double period_s_;
  KnobActionMode mode_;
  unsigned mask_;
  DecideOn decide_on_;
  double max_period_s_;
  std::vector<double> last_decision_s_;  // per job; NaN before the first decision
  std::vector<int> decisions_;
  Command cmd_;
  std::vector<double> obs_buf_, act_buf_;
};

}  // namespace fw::rl

#pragma once
// CapNetController (`capnet:PATH` in `flexwatt eval` / `flexwatt caps`): one small shared
// policy applied to every GPU. Every period_s (default 10 s) it builds each GPU's
// observation (rl/cap_features.hpp: that GPU's power, cap, clock, utilisation, temperature,
// its clock gap to the slowest GPU of its job, and the job's step rate), asks the policy
// for its deterministic action a (one Gaussian entry "cap_step", clipped to [−1, 1]) and
// requests cap = current cap + a · step_frac · nameplate for that GPU. GPUs without a busy
// sample in the period (no job, checkpoint, data stall) keep their cap. The SafetyLimiter
// clamps the request to the device range, as for every controller. One policy file serves
// 1, 8 or 64 GPUs. Meter-blind: no budget-window input.
//
// Allocation: decide() allocates nothing after reset() (buffers sized there).

#include <memory>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "rl/cap_features.hpp"
#include "rl/policy.hpp"

namespace fw::rl {

// The policy's action spec: one Gaussian entry, cap_step in [−1, 1].
ActionSpec cap_action_spec();
inline constexpr double kCapDefaultPeriodS = 10;
inline constexpr double kCapDefaultStepFrac = 0.05;  // of nameplate per decision at |a| = 1

class CapNetController : public Controller {
 public:
  // Checks the observation and action specs (the message names the first difference).
  // period_s <= 0: the policy's metadata.decision_period_s (10 s when absent); step_frac
  // from metadata.cap_step_frac (0.05 when absent).
  static Result<std::unique_ptr<CapNetController>> create(Policy policy, double period_s = 0);

  std::string name() const override { return "capnet"; }
  double period_s() const override { return period_s_; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override { return decide(obs); }
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }
  // The command for this decision; valid until the next call. REQUIRES: reset() first.
  const Command& decide(const Observation& obs);
  const Policy& policy() const { return policy_; }

 private:
  CapNetController(Policy policy, double period_s, double step_frac)
      : policy_(std::move(policy)), period_s_(period_s), step_frac_(step_frac) {}
  Policy policy_;
  double period_s_, step_frac_;
  CapFeatureState state_;
  Command cmd_;
  std::vector<double> obs_buf_;
  std::vector<uint8_t> busy_;
};

}  // namespace fw::rl

#pragma once
// zeus: the power-limit optimizer of Zeus (You, Chung, Chowdhury, NSDI '23; ml-energy/zeus,
// GlobalPowerLimitOptimizer with the ZeusCost selector) as a peer baseline. Our own code.
//
// Per job, during a warm-up profile: try caps from the highest settable one down to the
// lowest in cap_step_w strides (Zeus default 25 W). Each cap: set it, let warmup_steps
// training steps pass (and at least min_warmup_s), then measure for profile_steps steps
// (and at least min_profile_s): energy E of the job's GPUs, time T, tokens N. Then hold
// the cap minimising Zeus's cost per unit of work,
//     C = (η·E + (1 − η)·MaxPower·T) / N,   MaxPower = highest cap × the job's GPU count,
// with η = eta (Zeus default 0.5). Zeus knows nothing of the power budget (as published);
// it sets caps only; workload knobs stay at their configured values (as uncontrolled). A phase that
// sees no new step within max_phase_s ends on time instead.

#include <vector>

#include "control/controller.hpp"

namespace fw {

struct ZeusConfig {
  double eta = 0.5;  // 0..1
  double cap_step_w = 25;
  int warmup_steps = 1;
  int profile_steps = 1;
  double min_warmup_s = 5;
  double min_profile_s = 30;
  double max_phase_s = 300;
  double period_s = 0.5;  // polling period (Zeus acts on step boundaries)
};

class ZeusController : public Controller {
 public:
  explicit ZeusController(ZeusConfig cfg) : cfg_(cfg) {}
  std::string name() const override { return "zeus"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }

  // Per job: the chosen cap (NaN while profiling).
  std::vector<double> chosen_caps_w() const;

 private:
  struct Measurement {
    double cap_w, energy_j, time_s, tokens;
  };
  struct JobState {
    enum class Phase { kStart, kWarmup, kProfile, kDone } phase = Phase::kStart;
    std::vector<double> caps;  // descending
    size_t index = 0;
    double phase_start_s = 0, energy_j = 0, start_tokens = 0, start_steps = 0;
    double last_t = 0;
    std::vector<Measurement> measurements;
    double chosen_w = 0;
  };
  double choose(const JobState& s, double max_power_w) const;
  ZeusConfig cfg_;
  std::vector<JobState> jobs_;
};

}  // namespace fw

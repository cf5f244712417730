#pragma once
// pid: a PID loop per job on the power error, driving one actuator.
//
// e = target − m/B, B the budget (so e is dimensionless) and m, per `signal`:
//   kMean: the trailing mean power of the job's budget unit over measure_s;
//   kPeak (default): the largest rolling budget-window mean of that unit among windows
//     ending in the last measure_s — what the budget judges, so phases of low power (GRPO
//     generation) do not hide the high ones (the update) from the loop. The output is a fraction of
//     the
// actuator's ladder, u = I + kp·e + kd·de/dt, clamped to [0, 1] and set to the nearest
// rung. I (the integral, already in output units) grows by ki·e·dt and is clamped to
// [0, 1] (anti-windup: the integral never winds past the actuator's range), and is not
// integrated further while u is saturated in the direction of e (conditional integration).
// I starts at the fraction in force at the first decision (bumpless start).

#include <vector>

#include "control/actuator.hpp"
#include "control/controller.hpp"

namespace fw {

struct PidConfig {
  Actuator actuator;
  // Defaults tuned by hand on simulated grpo-7b-a100 (training steps of ~55 s, group
  // size acting from the next step): slow integral, decisions every 30 s.
  double kp = 0.3;       // per unit of error
  double ki = 0.005;     // per unit of error per second
  double kd = 0;         // per unit of error rate (s)
  double target = 0.95;  // fraction of budget aimed at
  double period_s = 30;
  enum class Signal { kMean, kPeak } signal = Signal::kPeak;
  double measure_s = 0;  // trailing span; 0: the budget's window (kMean), 120 s (kPeak)
};

class PidController : public Controller {
 public:
  explicit PidController(PidConfig cfg) : cfg_(cfg) {}
  std::string name() const override { return "pid"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(cfg_.actuator.index()); }

 private:
  struct State {
    bool started = false;
    double integral = 1, last_error = 0;
  };
  PidConfig cfg_;
  std::vector<State> state_;  // per job
};

}  // namespace fw

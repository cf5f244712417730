#pragma once
// The comparison arms of the per-GPU cap study (docs/caps.md), as controllers:
//   FixedCapController    one cap for every GPU from t = 0 (a point of the uniform static
//                         frontier)
//   PerGpuStaticController per-GPU caps set once from a calibration span of the same run:
//                         uncapped for calib_s after the job's first busy sample, then each
//                         GPU's cap = P0 + r · (P_k − P0), where P_k is its mean busy power over
//                         the span and P0 = idle_frac · nameplate (the power that does not follow
//                         the load; assumption 0.2). With P ≈ P0 + load·f(clock), one r puts
//                         every GPU near the same clock, so a lightly loaded GPU is capped lower
//                         (a point of the per-GPU static frontier, swept over r).
// Both claim the cap actuator; neither reads the budget.

#include <vector>

#include "control/controller.hpp"

namespace fw {

class FixedCapController : public Controller {
 public:
  explicit FixedCapController(double cap_w) : cap_w_(cap_w) {}
  std::string name() const override { return "uniform"; }
  double period_s() const override { return 1e9; }
  void reset(const PlantInfo& info) override { n_ = info.gpus.size(); }
  Command update(const Observation&) override {
    Command c;
    c.power_cap_w.assign(n_, cap_w_);
    return c;
  }
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }

 private:
  double cap_w_;
  size_t n_ = 0;
};

class PerGpuStaticController : public Controller {
 public:
  PerGpuStaticController(double ratio, double calib_s = 60, double idle_frac = 0.2)
      : ratio_(ratio), calib_s_(calib_s), idle_frac_(idle_frac) {}
  std::string name() const override { return "per-gpu-static"; }
  double period_s() const override { return 0.5; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }

 private:
  double ratio_, calib_s_, idle_frac_;
  double first_busy_s_ = -1;
  bool done_ = false;
  std::vector<double> sum_w_;
  std::vector<int> n_;
};

}  // namespace fw

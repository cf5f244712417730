#pragma once
// threshold: the hysteresis rule of the research (docs/sources.md §1a, baselines: "shrink
// group size when power > 90 % of cap, grow it when < 70 %"). Every period_s, per job: if
// the trailing mean power of its budget unit over measure_s exceeds upper·budget, step the
// actuator down `step_rungs` rungs; if below lower·budget, step up; else hold.
// Starts from the setting read at the first decision (the ladder's top when unreadable).

#include <vector>

#include "control/actuator.hpp"
#include "control/controller.hpp"

namespace fw {

struct ThresholdConfig {
  Actuator actuator;
  double upper = 0.9;  // fraction of budget
  double lower = 0.7;  // fraction of budget; REQUIRES lower < upper
  double period_s = 10;
  double measure_s = 0;  // trailing span measured; 0: the budget's window
  int step_rungs = 1;
};

class ThresholdController : public Controller {
 public:
  explicit ThresholdController(ThresholdConfig cfg) : cfg_(cfg) {}
  std::string name() const override { return "threshold"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override { rung_.assign(info.jobs.size(), -1); }
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override { return only_actuator(cfg_.actuator.index()); }

 private:
  ThresholdConfig cfg_;
  std::vector<int> rung_;  // per job; -1 before the first decision
};

}  // namespace fw

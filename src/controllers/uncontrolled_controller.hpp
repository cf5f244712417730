#pragma once
// uncontrolled: what a node does with no power control — every exposed knob at the value
// the job is configured to run with (JobInfo.default_knobs: the scenario's gen_concurrency,
// group_size; the range's top when unset), every cap at the device default. Repeats that
// command each period. Other baselines leave the knobs they do not drive at these values.

#include "control/controller.hpp"

namespace fw {

class UncontrolledController : public Controller {
 public:
  explicit UncontrolledController(double period_s = 10) : period_s_(period_s) {}
  std::string name() const override { return "uncontrolled"; }
  double period_s() const override { return period_s_; }
  Command update(const Observation& obs) override;
  // Holds every actuator at its configured value (caps at default).
  ActuatorSet claims() const override { return all_actuators(); }

 private:
  double period_s_;
};

}  // namespace fw

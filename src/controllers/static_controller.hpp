#pragma once
// static: one fixed setting held for the whole episode — the actuator of every job at the
// same rung fraction of its ladder (0 = lowest, 1 = highest), or an explicit value. Other
// knobs stay at their configured values, caps at default (as uncontrolled), unless they are the
// actuator or are pinned (`hold`: a value per knob for every job, NaN = configured value; a
// held actuator knob keeps its hold, so a setting of several knobs is all holds). Which
// setting is "safe" is found by calibrate_static() (static_calibration.hpp).

#include "control/actuator.hpp"
#include "control/controller.hpp"

namespace fw {

class StaticController : public Controller {
 public:
  // value: the actuator's setting (knob value or cap W) for every job; NaN: use fraction.
  StaticController(Actuator actuator, double fraction, double value = kUnset, double period_s = 10,
                   KnobValues hold = kNoKnobs)
      : actuator_(actuator), fraction_(fraction), value_(value), period_s_(period_s), hold_(hold) {}
  std::string name() const override { return "static"; }
  double period_s() const override { return period_s_; }
  Command update(const Observation& obs) override;
  // The actuator and the pinned knobs.
  ActuatorSet claims() const override {
    ActuatorSet s = only_actuator(actuator_.index());
    for (int q = 0; q < kNumKnobs; ++q) {
      if (!std::isnan(hold_[q])) s.set(q);
    }
    return s;
  }

  const Actuator& actuator() const { return actuator_; }
  double fraction() const { return fraction_; }
  double value() const { return value_; }
  const KnobValues& hold() const { return hold_; }

 private:
  Actuator actuator_;
  double fraction_, value_, period_s_;
  KnobValues hold_;
};

}  // namespace fw

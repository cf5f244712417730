#pragma once
// static:schedule=levels: the same-information fixed baseline of a scheduled budget (a grid
// event announced in advance). One fixed setting per segment of the schedule, each calibrated
// on its own budget level (static_calibration.hpp), switched at given times: a StaticController
// per segment, the one whose switch_s is the last at or before the observation's time in force.
// The segments' switch times are the caller's (prepare_static(): a drop one budget window
// early, so the trailing window is under the new level when it starts; a rise at its time).

#include <memory>
#include <vector>

#include "controllers/static_controller.hpp"

namespace fw {

class ScheduledStaticController : public Controller {
 public:
  struct Segment {
    double switch_s = 0;  // held from this time on (the first segment from t = 0)
    StaticController setting;
  };
  // REQUIRES: !segments.empty(), switch_s ascending.
  explicit ScheduledStaticController(std::vector<Segment> segments, double period_s = 10)
      : segments_(std::move(segments)), period_s_(period_s) {}
  std::string name() const override { return "static"; }
  double period_s() const override { return period_s_; }
  void reset(const PlantInfo& info) override {
    for (Segment& s : segments_) s.setting.reset(info);
  }
  Command update(const Observation& obs) override;
  // Every segment's actuators.
  ActuatorSet claims() const override;

 private:
  std::vector<Segment> segments_;
  double period_s_;
};

}  // namespace fw

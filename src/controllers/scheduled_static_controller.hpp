#pragma once
// scheduled static: a fixed setting per segment of the episode — segment k (from start_s[k]
// until the next one starts) holds StaticController k's setting. It is the recalibrated
// static (an operator who recalibrates every N minutes on the workload as it is then) and the
// hindsight per-segment fixed setting (each segment calibrated on its whole span: an upper
// reference no one can deploy); which is which is the calibration's business
// (builtin_controllers.cpp, static with recal_s), not this controller's.
// REQUIRES: segments non-empty, sorted by start_s, the first at 0.

#include <vector>

#include "controllers/static_controller.hpp"

namespace fw {

class ScheduledStaticController : public Controller {
 public:
  struct Segment {
    double start_s = 0;
    StaticController setting;
  };
  ScheduledStaticController(std::vector<Segment> segments, double period_s)
      : segments_(std::move(segments)), period_s_(period_s) {}
  std::string name() const override { return "static"; }
  double period_s() const override { return period_s_; }
  Command update(const Observation& obs) override;
  // Every segment's actuator and pins.
  ActuatorSet claims() const override;

 private:
  std::vector<Segment> segments_;
  double period_s_;
};

}  // namespace fw

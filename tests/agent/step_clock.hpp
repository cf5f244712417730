#pragma once
// A clock for the agent's tests: time moves only when the loop sleeps, straight to the deadline
// (no real sleeping); on_sleep (optional) runs after each sleep.

#include <functional>

#include "runtime/clock.hpp"

namespace fw::agent::testing {

class StepClock : public Clock {
 public:
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override {
    if (t_s > now_) now_ = t_s;
    if (on_sleep) on_sleep();
  }
  std::function<void()> on_sleep;

 private:
  double now_ = 0;
};

}  // namespace fw::agent::testing

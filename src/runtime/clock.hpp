#pragma once
// Clock: the time source of the wall-clock loop, injectable so tests run without sleeping.
// Times are seconds on a monotonic clock from an arbitrary origin (SteadyClock: its
// construction).

#include <chrono>

namespace fw {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() = 0;
  // Returns at t_s or later (at once when t_s is not in the future).
  virtual void sleep_until_s(double t_s) = 0;
};

// std::chrono::steady_clock, with now_s() = 0 at construction.
class SteadyClock : public Clock {
 public:
  SteadyClock() : t0_(std::chrono::steady_clock::now()) {}
  double now_s() override;
  void sleep_until_s(double t_s) override;

 private:
  std::chrono::steady_clock::time_point t0_;
};

// A clock that runs `scale` times faster than `inner` (sim backend demos and tests:
// time_scale): now_s() = inner.now_s() · scale. REQUIRES: scale > 0; `inner` outlives this.
class ScaledClock : public Clock {
 public:
  ScaledClock(Clock& inner, double scale) : inner_(inner), scale_(scale) {}
  double now_s() override { return inner_.now_s() * scale_; }
  void sleep_until_s(double t_s) override { inner_.sleep_until_s(t_s / scale_); }

 private:
  Clock& inner_;
  double scale_;
};

}  // namespace fw

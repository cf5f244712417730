#pragma once
// Toy environments for the RL tests: reach a random target on a line, per dimension.
// Observation: [x_1..x_D, target_1..target_D], both uniform in [-1, 1] at reset.
// Reward per step: -mean |x - target|. Fixed length: truncated after `length` steps.
// TargetReachDiscrete: one categorical factor per dimension, {down, stay, up} moves 0.1.
// TargetReachGaussian: one real per dimension, clipped to [-1, 1], moves 0.1 * action.

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/rng.hpp"
#include "rl/env.hpp"

namespace fw::rl::testing {

class TargetReach : public Env {
 public:
  TargetReach(int dims, bool gaussian, int length = 20)
      : dims_(dims), gaussian_(gaussian), length_(length), x_(dims), target_(dims) {
    std::vector<std::string> names;
    for (int i = 0; i < dims; ++i) names.push_back("x" + std::to_string(i));
    for (int i = 0; i < dims; ++i) names.push_back("target" + std::to_string(i));
    obs_.names = names;
    const auto an = numbered_names("move", dims);
    action_ = gaussian ? ActionSpec::gaussian(an, std::vector<double>(dims, -1.0),
                                              std::vector<double>(dims, 1.0))
                       : ActionSpec::categorical(an, std::vector<int>(dims, 3));
  }
  const ObsSpec& obs_spec() const override { return obs_; }
  const ActionSpec& action_spec() const override { return action_; }

  Status reset(uint64_t seed, std::span<double> obs) override {
    Rng rng(seed);
    for (int i = 0; i < dims_; ++i) {
      x_[i] = rng.uniform(-1, 1);
      target_[i] = rng.uniform(-1, 1);
    }
    t_ = 0;
    write(obs);
    return Status::Ok();
  }

  Result<StepResult> step(std::span<const double> action, std::span<double> obs) override {
    double dist = 0;
    for (int i = 0; i < dims_; ++i) {
      const double move = gaussian_ ? std::clamp(action[i], -1.0, 1.0) : action[i] - 1.0;
      x_[i] = std::clamp(x_[i] + 0.1 * move, -1.5, 1.5);
      dist += std::abs(x_[i] - target_[i]);
    }
    ++t_;
    write(obs);
    StepResult r;
    r.reward = -dist / dims_;
    r.truncated = t_ >= length_;
    return r;
  }

 private:
  void write(std::span<double> obs) const {
    for (int i = 0; i < dims_; ++i) {
      obs[i] = x_[i];
      obs[dims_ + i] = target_[i];
    }
  }
  int dims_;
  bool gaussian_;
  int length_;
  int t_ = 0;
  std::vector<double> x_, target_;
  ObsSpec obs_;
  ActionSpec action_;
};

inline std::vector<std::unique_ptr<Env>> make_envs(int n, int dims, bool gaussian,
                                                   int length = 20) {
  std::vector<std::unique_ptr<Env>> v;
  for (int i = 0; i < n; ++i) v.push_back(std::make_unique<TargetReach>(dims, gaussian, length));
  return v;
}

// Central finite difference of f at x[i] (x restored afterwards).
template <typename F>
double central_diff(F&& f, double& xi, double h = 1e-6) {
  const double saved = xi;
  xi = saved + h;
  const double plus = f();
  xi = saved - h;
  const double minus = f();
  xi = saved;
  return (plus - minus) / (2 * h);
}

// |a - b| / max(1e-8 scale, |a| + |b|): relative error tolerant of tiny gradients.
inline double rel_err(double a, double b, double floor = 1e-7) {
  return std::abs(a - b) / std::max(floor, std::abs(a) + std::abs(b));
}

}  // namespace fw::rl::testing

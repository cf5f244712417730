#pragma once
// Controller: decides a Command from an Observation, every period_s seconds.
//
// Contract: controllers never read a clock, never touch hardware, never own randomness
// they were not handed (a seed in the constructor), and do not throw. reset() is called
// once before the first update() of an episode. A Command's NaN entries mean "leave as
// it is"; the SafetyLimiter stands between every Command and the plant.

#include <string>

#include "control/command.hpp"
#include "control/observation.hpp"
#include "control/plant.hpp"

namespace fw {

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string name() const = 0;
  // Decision period in seconds (> 0); the loop rounds it up to whole sample periods.
  virtual double period_s() const = 0;
  virtual void reset(const PlantInfo& info) {}
  virtual Command update(const Observation& obs) = 0;
};

// Optional second interface for controllers that must see the plant itself — the oracle
// bound, look-ahead search. They get a plant they may clone() but never write to. A loop
// over hardware (clone() == nullptr) makes such a controller fall back or fail loudly.
class PlantBranching {
 public:
  virtual ~PlantBranching() = default;
  // `plant` outlives the episode; only clone() and info() may be called on it.
  virtual void bind_plant(const Plant* plant) = 0;
};

}  // namespace fw

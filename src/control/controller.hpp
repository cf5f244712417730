#pragma once
// Controller: decides a Command from an Observation, every period_s seconds.
//
// Contract: controllers never read a clock, never touch hardware, never own randomness
// they were not handed (a seed in the constructor), and do not throw. reset() is called
// once before the first update() of an episode. A Command's NaN entries mean "leave as
// it is"; the SafetyLimiter stands between every Command and the plant.
//
// Claims: claims() names the actuators (kActuatorTable rows) the controller may set, for
// every job or GPU; it is read after reset(), and a ControlLoop refuses to start with two
// controllers that claim the same actuator. Alone, a controller's whole command passes (the
// baselines pin what they do not claim at its uncontrolled value); composed with others, only
// its claimed actuators do (merge_command()).

#include <bitset>
#include <string>
#include <vector>

#include "control/observation.hpp"
#include "control/plant.hpp"
#include "core/status.hpp"
#include "vocab/command.hpp"

namespace fw {

// A set of kActuatorTable rows (bit i = row i).
using ActuatorSet = std::bitset<kNumActuators>;
inline ActuatorSet all_actuators() { return ActuatorSet().set(); }
inline ActuatorSet only_actuator(int row) { return ActuatorSet().set(static_cast<size_t>(row)); }
// "gen_concurrency+cap" (canonical names, table order); "none" when empty.
std::string actuator_set_name(const ActuatorSet& s);

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string name() const = 0;
  // Decision period in seconds (> 0); the loop rounds it up to whole sample periods.
  virtual double period_s() const = 0;
  virtual void reset(const PlantInfo& info) {}
  virtual Command update(const Observation& obs) = 0;
  // The actuators this controller commands (see "Claims" above). Valid after reset().
  virtual ActuatorSet claims() const = 0;
};

// Ok when no two of `controllers` claim the same actuator; otherwise InvalidArgument naming
// both controllers and the actuator. Call after every controller's reset().
Status check_claims(const std::vector<const Controller*>& controllers);

// Copies the set (non-NaN) entries of `c` into `into`, only those of the actuators in
// `claims` when it is non-null. A vector of the wrong size replaces into's whole vector (the
// SafetyLimiter then rejects it). REQUIRES: into sized by blank_command().
void merge_command(const Command& c, const ActuatorSet* claims, Command& into);

// Optional second interface for controllers that must see the plant itself — the
// look-ahead reference's search. They get a plant they may clone() but never write to. A loop
// over hardware (clone() == nullptr) makes such a controller fall back or fail loudly.
class PlantBranching {
 public:
  virtual ~PlantBranching() = default;
  // `plant` outlives the episode; only clone() and info() may be called on it.
  virtual void bind_plant(const Plant* plant) = 0;
};

}  // namespace fw

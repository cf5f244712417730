#pragma once
// Env: what the PPO trainer learns on. Knows nothing of plants or simulators; an
// environment over a fw::Plant implements this interface.
//
// Contract:
// - obs_spec() and action_spec() are fixed for the environment's lifetime.
// - reset(seed, obs) starts a new episode; the same seed gives the same episode.
// - step(action, obs) applies one action (action.size() == action_spec().dim(); categorical
//   entries are option indices) and writes the next observation into obs
//   (obs.size() == obs_spec().dim()). After a step that returns terminated or truncated
//   the caller must reset() before stepping again; `obs` then holds the episode's final
//   observation, used to bootstrap the value of a truncated episode.
// - terminated: the task ended (no future reward); truncated: a time limit cut the
//   episode (future reward exists). Fixed-length episodes end with truncated = true.
// - Neither call allocates in steady state; errors come back as Status, never as throws.
// Not thread-safe; the trainer uses one instance per rollout slot.

#include <cstdint>
#include <span>

#include "core/status.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

struct StepResult {
  double reward = 0;
  bool terminated = false;
  bool truncated = false;
  bool done() const { return terminated || truncated; }
};

class Env {
 public:
  virtual ~Env() = default;
  virtual const ObsSpec& obs_spec() const = 0;
  virtual const ActionSpec& action_spec() const = 0;
  virtual Status reset(uint64_t seed, std::span<double> obs) = 0;
  virtual Result<StepResult> step(std::span<const double> action, std::span<double> obs) = 0;
};

}  // namespace fw::rl

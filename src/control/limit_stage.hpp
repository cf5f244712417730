#pragma once
// LimitStage: one stage of a tick's limit chain. ControlLoop::limit_and_act() passes the
// merged request through its stages in the order set (ControlLoop::set_stages), then through
// the SafetyLimiter, the chain's last stage, then writes. eval's loop has no stages (the
// limiter alone); the node agent declares its own (agent/agent_stages.hpp): GPUs no job lists,
// the fail-safe, the coordinator's share guard. Every stage's output still goes through the
// limiter, so its range checks, and its slew and dwell rules on raises, hold for all of them;
// cuts always pass.
//
// Contract of apply(): rewrites `cmd` for this tick only (set, cut or replace entries; NaN:
// leave the actuator as it is) and returns true when the rewritten request must be written
// even though no controller decided this tick (a fallback in force, a share lowered). It never
// writes to the plant itself.

#include "control/plant.hpp"
#include "vocab/command.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

class LimitStage {
 public:
  virtual ~LimitStage() = default;
  virtual const char* name() const = 0;
  virtual bool apply(const PlantInfo& info, const Snapshot& latest, Command& cmd) = 0;
};

}  // namespace fw

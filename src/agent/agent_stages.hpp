#pragma once
// The node agent's limit stages (control/limit_stage.hpp), in the order AgentTick declares
// them before the SafetyLimiter:
//   UnlistedGpusStage  a GPU no job lists keeps the cap and power smoothing in force: the
//                      request's cap and per-GPU settings for it are dropped (never forces a
//                      write).
//   FailSafeStage      while a fallback is in force, the request is replaced by the static safe
//                      setting (safe caps on every GPU, each job's default knobs); forces the
//                      write at every tick of the fallback.
//   ShareGuardStage    following a coordinator, the caps left in force never sum above the
//                      node's share (clamp_caps_to_share, agent/fleet_budget.hpp); forces the
//                      write when it cuts, so a lowered share is in force at the next tick.
// The limiter then checks every cap and knob (range; slew and dwell on raises only; the
// shield), so the fail-safe and the share guard are limits like the others: their cuts pass at
// once, their raises are paced. Fields are set by the tick before limit_and_act().

#include "control/limit_stage.hpp"

namespace fw::agent {

class UnlistedGpusStage : public LimitStage {
 public:
  const char* name() const override { return "unlisted_gpus"; }
  bool apply(const PlantInfo& info, const Snapshot& latest, Command& cmd) override;
};

class FailSafeStage : public LimitStage {
 public:
  const char* name() const override { return "fail_safe"; }
  bool apply(const PlantInfo& info, const Snapshot& latest, Command& cmd) override;
  bool active = false;
  Command safe;  // the safe setting in force while active
};

class ShareGuardStage : public LimitStage {
 public:
  const char* name() const override { return "share_guard"; }
  bool apply(const PlantInfo& info, const Snapshot& latest, Command& cmd) override;
  bool active = false;  // following a coordinator, with a good read this tick
  double share_w = 0;
};

}  // namespace fw::agent

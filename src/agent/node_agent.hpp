#pragma once
// NodeAgent: the node daemon's control path — `flexwatt agent` is flags → config → this. It
// composes parts with one job each:
//   NodeLifecycle    (node_lifecycle.hpp)   lock, plant, the restore file, caps put back;
//   AgentTick        (agent_tick.hpp)       one tick: commands, fleet budget, fail safe, and the
//                                           same ControlLoop as `eval` driven by its phases;
//   FleetFollower    (fleet_follower.hpp)   the coordinator's budget (cfg.fleet);
//   TraceRotation    (trace_rotation.hpp)   the recorded trace's segments;
//   StatePublisher   (state_publisher.hpp)  what the HTTP threads read (AgentState, the
//                                           controller-validation copy);
// and runtime/realtime_driver.hpp times the ticks on the wall clock.
//
// start():
//   1. takes the node lock (one writer per node; a second agent is refused: Unavailable);
//   2. opens the NodePlant and sets the starting budget; if a restore file is there, the
//      previous run died without restoring: its caps go back in force when the node's share
//      allows them, else the share's caps (and the file is written anew);
//   3. saves the caps to put back and writes the restore file (atomic, fsync'ed) — before any
//      other cap write;
//   4. joins the fleet (cfg.fleet), prepares the controller through the registry (the same
//      specs as `eval`), starts the HTTP API and the trace.
// run(): the real-time loop: RealTimeDriver ticks every period_s on a drift-free schedule
// (late ticks counted; a missed deadline skipped on hardware, caught up on a plant that keeps
// its own time, the simulator, so the episode does not depend on load), AgentTick::tick, the
// trace, StatePublisher::publish; WATCHDOG=1 to systemd. Fail safe (agent_tick.hpp): a failed
// or stale read, a controller that throws, or a job whose channel went quiet puts the static
// safe setting in force at once (that tick) until the cause clears; AgentState::fallback_reason
// and fallbacks_total say so.
// read_only: steps 2–3 write nothing and nothing is ever written (measure, decide, serve).
// shutdown(): restores the saved caps, removes the restore file, stops the API, leaves the
// fleet, closes the trace, drops the lock.
// The loop itself never throws.

#include <functional>
#include <memory>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/agent_tick.hpp"
#include "agent/commands.hpp"
#include "agent/job_registry.hpp"
#include "agent/node_lifecycle.hpp"
#include "agent/state_hub.hpp"
#include "control/controller.hpp"
#include "core/status.hpp"
#include "runtime/clock.hpp"

namespace fw::agent {

struct AgentRunSummary {
  int64_t ticks = 0;
  int64_t late_ticks = 0;       // ticks taken after their deadline
  int64_t missed_ticks = 0;     // deadlines missed (hardware: skipped; sim: caught up, below)
  int64_t caught_up_ticks = 0;  // sim: missed deadlines whose ticks were taken late
  double max_lateness_s = 0;
  int64_t fallbacks = 0;  // entries into the safe setting
  int64_t write_failures = 0;
};

class NodeAgent {
 public:
  explicit NodeAgent(AgentConfig cfg);
  ~NodeAgent();
  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Replaces the registry (call before start()).
  void set_controller_maker(ControllerMaker m);
  Status start();
  // Runs until stop_requested() (checked at least every 0.2 s) or duration_s.
  AgentRunSummary run(Clock& clock, const std::function<bool()>& stop_requested);
  // Restores the caps saved at start and removes the restore file. Safe to call twice.
  Status shutdown();
  int tcp_port() const;
  // The parts the HTTP API shares (for embedding and tests); valid for the agent's lifetime.
  StateHub& hub();
  CommandQueue& commands();
  JobRegistry& jobs();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace fw::agent

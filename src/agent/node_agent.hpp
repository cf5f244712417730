#pragma once
// NodeAgent: the node daemon's control path — `flexwatt agent` is flags → config → this.
//
// start():
//   1. takes the node lock (one writer per node; a second agent is refused: Unavailable);
//   2. opens the NodePlant; if a restore file is there, the previous run died without
//      restoring: its caps are written back first (and the file removed);
//   3. saves the caps in force and writes the restore file (atomic, fsync'ed) — before any
//      cap write;
//   4. prepares the controller through the registry (the same specs as `eval`) and starts the
//      HTTP API.
// run(): the real-time loop. Ticks every period_s on a drift-free schedule (late ticks are
// counted, missed deadlines skipped and the plant's time kept on the wall clock; on the sim
// backend missed ticks are caught up instead, so the episode does not depend on load), each tick:
// drain the CommandQueue (budget, controller), sense through the Stepper, decide (controller
// due every period, rounded up to whole ticks), limit (SafetyLimiter) and write; publish an
// AgentState; send WATCHDOG=1 to systemd. Fail safe: a failed or stale read, a controller that
// throws, or a job whose channel went quiet puts the static safe setting in force at once
// (that tick) until the cause clears; AgentState::fallback_reason and fallbacks_total say so.
// read_only: steps 2–3 are skipped and nothing is ever written (measure, decide, serve).
// shutdown(): restores the saved caps, removes the restore file, stops the API, drops the lock.
// The loop itself never throws.

#include <functional>
#include <memory>
#include <string>

#include "agent/agent_config.hpp"
#include "agent/commands.hpp"
#include "agent/job_registry.hpp"
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

// Builds a controller from a spec for the plant's current info (the registry by default;
// tests inject failing ones).
using ControllerMaker = std::function<Result<std::unique_ptr<Controller>>(const std::string& spec)>;

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

// How `flexwatt agent --restore` runs.
struct RestoreOptions {
  // Ignore the restore file's contents (a corrupt one included) and set every managed GPU to
  // the driver's default power limit, then remove the file (--to-default).
  bool to_default = false;
  // Wait this long for the node lock (the restore helper of a dying agent waits for it).
  double lock_wait_s = 0;
};

// `flexwatt agent --restore`: if cfg.restore_file exists, opens the backend's cap writer and
// writes the saved caps back, then removes the file. Ok (and "nothing to restore" in *what)
// when there is no file. Does not take the node lock when a live agent holds it: Unavailable.
// A corrupt file is InvalidArgument naming --to-default.
Status restore_from_file(const AgentConfig& cfg, std::string* what, const RestoreOptions& opt = {});

}  // namespace fw::agent

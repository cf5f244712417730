#pragma once
// ControlLoop: read → update → limit → write, in time passed in (never read from a clock).
// The stepping itself (tick times, sense, act) is control/stepper.hpp's, shared with the PPO
// environment and the oracle's look-ahead; the loop adds the controllers' schedule and merge.
//
// Tick k happens at t = k·sample_period_s, k = 0 … round(duration_s / sample_period_s) − 1:
//   1. Stepper::sense(): plant.read(t) → snapshot; pushed to the history ring, the metrics,
//      the recorder;
//   2. every controller whose next decision is due (first at t = 0, then every period_s
//      rounded up to whole ticks) gets update(obs); commands merge in the order controllers
//      were added, later non-NaN entries winning;
//   3. if any controller decided, Stepper::act(): the SafetyLimiter turns the merged command
//      into the one written (the shield acts here even when the controllers asked for nothing).
//      With the limiter's budget shield on, act() runs at every tick (an empty command between
//      decisions), so the shield acts every sample period, not every decision.
// Deterministic: same plant state, controllers and config → same trace, bit for bit.
// Never throws: an exception escaping a controller or plant becomes an Internal status.
// A failed read ends the episode with its status; a failed write is counted and skipped.
// Controllers implementing PlantBranching get the plant (for clone()) at start().
//
// The phases of a tick, for a driver that acts between them (the node agent's wall-clock loop:
// its fail-safe and share guard sit between decide() and act(); runtime/realtime_driver.hpp
// times the ticks). step() is exactly sense(); decide(); act(merged()) when it decided;
// advance() (act() at every tick with the shield on) — so a phased driver runs the schedule,
// merge, claims and limiter of `eval`:
//   sense()    Stepper::sense() (a failed read is returned; the driver decides what follows);
//   decide()   step 2 above; true when any controller decided. A controller that throws is
//              Internal (the merge of that tick is then incomplete) and is due again at the
//              next tick;
//   act(cmd)   Stepper::act(cmd): the SafetyLimiter, then the write; a failed write is counted
//              (write_failures()) and returned;
//   advance()  the next tick.
// restart() begins a new episode at the current tick (the budget's contents or the plant's job
// set changed): the limiter, history and metrics start over, every controller is reset and due
// at once, and the claims are checked again. set_controllers() swaps the composition between
// ticks (then call restart() or reset_controllers()). LoopConfig::open_ended: no episode length
// (duration_s is ignored, done() is always false; drive it by its phases, never run()).
// LoopConfig::track_metrics = false leaves EpisodeMetrics out (a loop that runs for days keeps
// its own windows; result() is then empty).

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "control/controller.hpp"
#include "control/decision_cost.hpp"
#include "control/episode_metrics.hpp"
#include "control/limit_stage.hpp"
#include "control/plant.hpp"
#include "control/recorder.hpp"
#include "control/safety_limiter.hpp"
#include "control/stepper.hpp"
#include "vocab/budget.hpp"

namespace fw {

struct LoopConfig {
  double sample_period_s = 0.5;
  double duration_s = 600;
  double history_s = 300;                            // span of snapshots kept for observations
  std::vector<double> windows_s = kDefaultWindowsS;  // metric windows
  bool track_metrics = true;                         // EpisodeMetrics over the episode
  bool open_ended = false;                           // no duration (a daemon's loop)
};

class ControlLoop {
 public:
  // `plant` and `budget` must outlive the loop. REQUIRES: budget non-empty.
  ControlLoop(Plant& plant, const BudgetSchedule& budget, LoopConfig cfg = {},
              LimiterConfig limiter = {});

  // Not owned; must outlive the loop. Add before start().
  void add_controller(Controller* c) { controllers_.push_back({c, 0}); }
  void set_recorder(Recorder* r) { stepper_.set_recorder(r); }

  // Replaces the controllers (not owned). Between ticks only.
  void set_controllers(std::vector<Controller*> cs);

  Status start();
  // One tick (start() first). REQUIRES: !done().
  Status step();
  bool done() const { return ticks_ > 0 && stepper_.tick() >= ticks_; }

  // The phases of step() (see above). start() first.
  Status sense() { return stepper_.sense(); }
  Result<bool> decide();
  const Command& merged() const { return merged_; }
  Status act(const Command& cmd);
  // Whether this tick writes: when a controller decided, and at every tick with the limiter's
  // budget shield on. step() and every phased driver (the agent) ask this one rule.
  bool acts_now(bool decided) const { return decided || stepper_.limiter().config().budget_shield; }
  // The tick's limit chain and write: merged() through every stage of set_stages() in order,
  // then act() when acts_now(decided) or a stage asked for the write (control/limit_stage.hpp).
  // step() runs it with no stages. Returns act()'s status; Ok when nothing was written.
  Status limit_and_act(bool decided);
  // The stages before the limiter (not owned; between ticks only).
  void set_stages(std::vector<LimitStage*> stages) { stages_ = std::move(stages); }
  void advance() { stepper_.advance(); }
  // A new episode from the current tick (see above).
  Status restart();
  // Resets every controller against the plant's info and makes it due at the current tick;
  // checks the claims of the composition.
  Status reset_controllers();
  bool has_controllers() const { return !controllers_.empty(); }
  int64_t tick() const { return stepper_.tick(); }
  const Snapshot& latest() const { return stepper_.latest(); }
  // start() and every step().
  Status run();

  double time_s() const { return stepper_.time_s(); }
  EpisodeResult result() const {
    return metrics_ ? metrics_->finish(stepper_.limiter().stats()) : EpisodeResult{};
  }
  const SafetyLimiter& limiter() const { return stepper_.limiter(); }
  int64_t write_failures() const { return write_failures_; }
  // Decision cost, a measurement only (it never feeds back into the loop or its results):
  // wall time spent inside the controllers' update() (steady_clock around each call) and the
  // number of calls, summed over controllers since start()/restart(); decision_cost() keeps
  // each call's wall and thread-CPU time (max, quantiles: control/decision_cost.hpp).
  double decision_wall_s() const { return decision_wall_s_; }
  int64_t decisions() const { return decisions_; }
  const DecisionCost& decision_cost() const { return decision_cost_; }
  const Status& first_write_error() const { return first_write_error_; }

 private:
  Status step_impl();
  struct Slot {
    Controller* c;
    int64_t next_tick;
  };
  Plant& plant_;
  const BudgetSchedule& budget_;
  LoopConfig cfg_;
  std::optional<EpisodeMetrics> metrics_;
  bool started_ = false;
  Stepper stepper_;
  Command merged_;
  std::vector<LimitStage*> stages_;
  std::vector<Slot> controllers_;
  int64_t ticks_ = 0;
  int64_t write_failures_ = 0;
  double decision_wall_s_ = 0;
  int64_t decisions_ = 0;
  DecisionCost decision_cost_;
  Status first_write_error_;
};

}  // namespace fw

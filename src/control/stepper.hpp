#pragma once
// Stepper: the one way flexwatt steps a plant through time, shared by ControlLoop, the PPO
// environment (rl/plant_env.hpp) and the oracle's look-ahead (controllers/oracle_controller.hpp).
//
// An episode starts with begin(). Tick k is read at t = start_s + k·sample_period_s (start_s 0
// for a whole episode, so t = k·sample_period_s exactly); time is passed in, never read from
// a clock.
//   sense(): plant.read(t) → snapshot (its time set to t); at the first successful sense() of
//     an episode begun with a budget (whatever its first tick) the SafetyLimiter is sized to the
//     plant's GPUs and jobs and learns the settings in force from it; then it is pushed to the
//     history ring, the metrics and the recorder (the last two optional). A failed read returns its
//     status, with the time.
//   observation(): what a controller sees after sense() (control/observation.hpp); valid
//     until the next sense(). REQUIRES: begin() was given a budget.
//   act(request): the SafetyLimiter turns the request into the command written; it is
//     written only when it sets anything. Returns the write's status (the caller decides:
//     ControlLoop counts and skips a failure, the PPO environment stops).
//   write(cmd): writes cmd as it is, unlimited (the oracle's imagined futures).
//   advance(): moves to the next tick.
// Deterministic; never throws itself (a plant or limiter exception passes through).
// Allocates in begin() and while the history ring first fills.

#include <cstdint>

#include "control/budget_units.hpp"
#include "control/episode_metrics.hpp"
#include "control/observation.hpp"
#include "control/plant.hpp"
#include "control/recorder.hpp"
#include "control/safety_limiter.hpp"
#include "control/snapshot_ring.hpp"
#include "vocab/budget.hpp"
#include "vocab/command.hpp"

namespace fw {

// Ticks of an episode of duration_s: max(1, round(duration_s / sample_period_s)).
int64_t episode_ticks(double duration_s, double sample_period_s);
// Ticks between decisions every period_s, rounded up to whole ticks (at least 1).
int64_t ticks_per_period(double period_s, double sample_period_s);
// Snapshots kept to cover history_s: ceil(history_s / sample_period_s) + 1.
size_t history_capacity(double history_s, double sample_period_s);

class Stepper {
 public:
  // REQUIRES: sample_period_s > 0.
  Stepper(double sample_period_s, double history_s, LimiterConfig limiter = {});

  // Starts an episode on `plant` (not owned; must outlive the episode). `budget` (may be
  // null: then no observation() or act()) must outlive it too; its first entry's scope
  // sets the budget units. The first sense() reads tick first_tick. Clears the history.
  void begin(Plant& plant, const BudgetSchedule* budget, double start_s = 0,
             int64_t first_tick = 0);
  // Not owned; null (the default) to skip. Kept across begin().
  void set_metrics(EpisodeMetrics* m) { metrics_ = m; }
  void set_recorder(Recorder* r) { recorder_ = r; }

  Status sense();
  Observation observation() const;
  Status act(const Command& request);
  Status write(const Command& cmd) { return plant_->write(cmd); }
  void advance() { ++tick_; }

  int64_t tick() const { return tick_; }
  double time_s() const { return start_s_ + static_cast<double>(tick_) * sample_period_s_; }
  double sample_period_s() const { return sample_period_s_; }
  const Snapshot& latest() const { return snap_; }  // the last snapshot sensed
  const SnapshotRing& history() const { return history_; }
  const BudgetUnits& units() const { return units_; }
  const SafetyLimiter& limiter() const { return limiter_; }
  Plant& plant() const { return *plant_; }

 private:
  double sample_period_s_;
  SafetyLimiter limiter_;
  SnapshotRing history_;
  Plant* plant_ = nullptr;
  const BudgetSchedule* budget_ = nullptr;
  BudgetUnits units_;
  EpisodeMetrics* metrics_ = nullptr;
  Recorder* recorder_ = nullptr;
  Snapshot snap_;
  double start_s_ = 0;
  int64_t tick_ = 0;
  bool limiter_fresh_ = false;  // the limiter was reset for this episode
};

}  // namespace fw

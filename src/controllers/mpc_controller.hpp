#pragma once
// mpc: model-predictive control on a twin fitted online from the run's own telemetry.
//
// Every replan_s the controller refits its twin (MpcTwin: what it learned from the snapshots
// it observed, nothing else — no plant clone, no plant seed, no future) and searches the twin
// for the best fixed setting of its actuators over the next horizon_s: the joint search of
// the static baseline (calibrate_static_joint, static_calibration.hpp) run on twin plants
// instead of the node, against the budget in force shrunk by the twin's uncertainty margin.
// The setting found is held until the next replan (a receding horizon of fixed settings).
//
// Uncertainty margin: after each plan the controller compares the twin's predicted worst
// trailing-window ratio of the setting with the worst trailing window it then observes
// (windows the shield below did not touch); the last under-prediction, clamped to
// [0, max_margin], is the margin the next plan keeps free.
//
// Shield (every decision, meter-blind): for each budget unit, the most the next sample may
// draw so that every trailing window ending in the next window's length stays under the
// budget B (less guard_w per GPU: a cap is only reached after the firmware's lag, and a
// phase's first sample may overshoot it by 100 W and more), assuming the samples after it at
// the unit's floor F (every GPU at its lowest cap):
//   min over h = 1..n of  (k + h)·B − Σ newest k samples − (h − 1)·F,  k = min(n − h, history)
// (n samples per window). Holding it at every decision keeps a safe continuation open (a
// one-window-only rule walks into windows that need less than the floor). Split evenly over
// the unit's GPUs, it caps each GPU's planned cap. It judges every
// trailing window, so it knows nothing of where a scorer's windows start. Its caps go through
// the SafetyLimiter like every command.
//
// Decision cost: the refit runs at the replan decision; the search (about 0.2 s of CPU at the
// defaults, bench/mpc_bench.cpp) runs off the decision thread. No decision waits for it
// (wait_for_plan = false, the default): every decision uses the last finished plan; a
// finished search's setting takes effect at the first decision at or after plan_delay_s
// after its replan at which it is done; a replan due while a search is still in flight is
// skipped (counted: skipped_replans()). On a node paced by the wall clock a 0.2 s search is
// done well within plan_delay_s, so the setting takes effect at plan_delay_s; in a simulation
// that runs faster than real time it takes effect later (then the episode depends on thread
// timing). wait_for_plan = true: the decision at plan_delay_s waits for the search (a fixed
// delay: the episode does not depend on thread timing). plan_delay_s = 0: the search runs
// inside the replan decision.
//
// Contract: as Controller. Never reads a clock; the twin's randomness comes from the search's
// seeds (config). A failed refit or a search with no safe setting keeps the setting in force.
// Not thread-safe itself (its search task touches only copies: the twin's plant factory, the
// budget and the search configuration).

#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "control/actuator.hpp"
#include "control/controller.hpp"
#include "controllers/static_calibration.hpp"
#include "core/status.hpp"

namespace fw {

// What the planner knows of the plant: a model refitted from observed snapshots.
class MpcTwin {
 public:
  virtual ~MpcTwin() = default;
  // Forgets what was observed (a new episode).
  virtual void reset() = 0;
  // One observed snapshot (each decision's newest).
  virtual void observe(const Snapshot& s) = 0;
  // Refits from what was observed up to now_s. Ok: a factory of twin plants (the workload as
  // fitted now, from the twin's start; seeded by the caller) and the fitted figures (notes).
  // An error when there is too little to fit (the caller keeps its plan).
  struct Fit {
    PlantFactory plants;
    nlohmann::json figures;
  };
  virtual Result<Fit> refit(double now_s) = 0;
};

// A fixed setting of the planned actuators (as StaticController holds it).
struct MpcSetting {
  Actuator inner = Actuator::of_index(kCapActuator);
  double fraction = 1.0;             // of the inner actuator's ladder
  double value = 0;                  // job 0's inner setting
  KnobValues hold = kNoKnobs;        // the outer knobs' values
  double predicted_worst_ratio = 0;  // on the twin, worst window / planning budget
  double predicted_tokens = 0;       // completed-step tokens per twin episode
};

// The setting a joint search found.
MpcSetting mpc_setting(const JointCalibration& j);

struct MpcConfig {
  double period_s = 0.5;  // decision (shield) period
  double replan_s = 600;  // refit and search period
  // The search on the twin: actuators, twin seeds (base.seeds), horizon (base.duration_s),
  // grid and refinement.
  JointCalibrationConfig search;
  bool shield = true;
  double guard_w = 5;          // shield: kept free in every trailing window, W per GPU
  double max_margin = 0.05;    // largest uncertainty margin, fraction of the budget
  double plan_delay_s = 10;    // the search's setting takes effect this long after the replan
  bool wait_for_plan = false;  // true: the decision at plan_delay_s waits for the search
};

// One replan, for the row's notes.
struct MpcPlanEvent {
  double time_s = 0;     // the replan (refit) time
  double applied_s = 0;  // when its setting took effect (time_s + plan_delay_s, or time_s)
  bool fitted = false, found = false;
  double margin = 0;
  int episodes = 0;  // twin episodes the search ran
  MpcSetting setting;
  nlohmann::json fit;  // the twin's fitted figures, or why it could not fit
};

class MpcController : public Controller {
 public:
  // `initial`: the setting until the first replan (the search on the declared twin).
  MpcController(MpcConfig cfg, std::unique_ptr<MpcTwin> twin, MpcSetting initial,
                std::function<void(const MpcPlanEvent&)> on_plan = nullptr);
  ~MpcController() override;
  std::string name() const override { return "mpc"; }
  double period_s() const override { return cfg_.period_s; }
  void reset(const PlantInfo& info) override;
  Command update(const Observation& obs) override;
  // The searched actuators and the caps (the shield).
  ActuatorSet claims() const override;

  const MpcSetting& setting() const { return setting_; }
  double margin() const { return margin_; }
  int shield_decisions() const { return shield_decisions_; }  // decisions the shield capped
  int replans() const { return replans_; }
  // Replans skipped because the previous search was still in flight (wait_for_plan false).
  int skipped_replans() const { return skipped_replans_; }

 private:
  void replan(const Observation& obs);
  // Takes the pending search's result (waiting for it) and starts its setting at time_s.
  void finish_plan(double time_s);
  // True when the pending search has finished (never waits).
  bool plan_ready() const;
  void apply_shield(const Observation& obs, Command& c);

  MpcConfig cfg_;
  std::unique_ptr<MpcTwin> twin_;
  MpcSetting initial_, setting_;
  std::function<void(const MpcPlanEvent&)> on_plan_;
  double next_replan_s_ = 0;
  // The search under way: its result, the event to complete, when it takes effect.
  std::future<Result<JointCalibration>> pending_;
  MpcPlanEvent pending_event_;
  double pending_margin_ = 0, apply_at_s_ = 0;
  double margin_ = 0;
  // Uncertainty tracking since the last plan: the worst untouched trailing window observed.
  double plan_start_s_ = 0, observed_worst_ = 0, last_shield_s_ = -1e300;
  int shield_decisions_ = 0, replans_ = 0, skipped_replans_ = 0;
  std::vector<double> known_;  // the shield's prefix sums (kept: no allocation once warm)
};

}  // namespace fw

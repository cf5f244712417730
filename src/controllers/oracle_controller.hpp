#pragma once
// The greedy search of the look-ahead *reference* (registry `lookahead`, alias oracle) with
// perfect knowledge of the future — not a bound (flexwatt quotes no bound: docs/control.md).
// The registry's lookahead is the better, per seed, of this search and every fixed setting
// of the same actuators on a grid (controllers/lookahead_plan.hpp). Never deployable: it
// needs a plant that can be cloned (the simulator) and looks at what will happen.
//
// Definition. Every period_s, for each candidate setting of its actuators (per actuator,
// `candidates` rungs spread evenly over every job's ladder, the same fraction for every job;
// with several actuators, every combination of those), the oracle
// clones the plant — random streams included, so the clone's future is the real future
// under that setting — holds the setting for horizon_s and records what happens. Feasible:
// every budget window (tumbling, aligned to t = 0, of the budget's window_s, including the
// samples of the open window already seen and a trailing window covering at least half of
// window_s) has mean power ≤ (1 − margin)·budget. It applies the feasible candidate with the
// most tokens over the horizon (ties: less energy); when none is feasible, the one with the
// smallest worst window mean. With `sliding`, feasibility is judged instead on the trailing
// window at every imagined sample once a full window exists (the window seeded with the
// samples already seen), the rule of eval's violation_rate_sliding, which no timing across
// fixed boundaries can dodge. Then, per actuator, it bisects between the best feasible
// fraction and the next coarse one above (up to 6 more candidates each), so the coarse grid
// does not cost it a safe rung. Receding horizon: it re-plans at the next decision.
//
// What kind of bound: exact foresight, but a greedy search over held settings, so it is an
// upper reference for controllers that hold a setting per period, not a proof that no
// schedule does better. The clones are stepped by control/stepper.hpp and judged by
// control/window_judge.hpp, the code that steps and judges every episode.
// It ignores the SafetyLimiter when imagining (the limiter still acts
// on what it applies). Non-actuated settings are as uncontrolled. Cost per decision:
// candidates^actuators × horizon_s / sample period plant ticks. The horizon must see the
// consequence of a decision: a group-size change acts from the next training step on,
// so it needs about two steps of look-ahead (a longer one makes "held for the whole
// horizon" overly cautious).

#include <optional>
#include <vector>

#include "control/actuator.hpp"
#include "control/controller.hpp"
#include "control/stepper.hpp"
#include "control/window_judge.hpp"

namespace fw {

struct OracleConfig {
  std::vector<Actuator> actuators;  // non-empty
  double period_s = 15;
  double horizon_s = 120;
  int candidates = 9;    // per actuator, >= 2
  double margin = 0;     // fraction of budget kept free
  bool sliding = false;  // judge trailing windows at every sample instead of tumbling ones
  // The budget schedule: each imagined (and seen) sample is judged against the budget in
  // force at its own time. Empty: the budget in force at the decision, for every sample.
  BudgetSchedule schedule;
};

class OracleController : public Controller, public PlantBranching {
 public:
  explicit OracleController(OracleConfig cfg) : cfg_(cfg) {}
  std::string name() const override { return "lookahead"; }
  double period_s() const override { return cfg_.period_s; }
  void bind_plant(const Plant* plant) override { plant_ = plant; }
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override {
    ActuatorSet s;
    for (const Actuator& a : cfg_.actuators) s.set(a.index());
    return s;
  }

  // Decisions that found no clone-capable plant (then it asks for nothing).
  int64_t blind_decisions() const { return blind_; }

 private:
  struct Outcome {
    bool feasible = true;
    double tokens = 0, energy_j = 0, worst_ratio = 0;
  };
  Outcome imagine(const Observation& obs, const Command& cmd);
  OracleConfig cfg_;
  const Plant* plant_ = nullptr;
  int64_t blind_ = 0;
  std::optional<Stepper> stepper_;  // steps the clones; made at the first decision
  WindowJudge judge_;               // the imagined windows, per budget unit
};

}  // namespace fw

#pragma once
// The look-ahead reference of one episode (registry name `lookahead`, alias `oracle`): with
// foresight of the whole episode (it runs the episode's own seed on fresh simulated plants
// before the real episode starts), the best of two kinds of plan:
//  - the greedy receding-horizon search (OracleController, oracle_controller.hpp), and
//  - every fixed setting of the same actuators on the static calibration's coarse grid
//    (static_calibration.hpp: per actuator, `fixed_candidates` rungs of job 0's ladder spread
//    evenly from the lowest to the highest, every job at the same ladder fraction; with
//    several actuators, every combination), held for the whole episode, the knobs it does not
//    set at the job's configured values and caps at default, as static does; then, from the
//    best admitted grid setting, per actuator, a bisection on job 0's rungs between its
//    fraction and the next grid fraction above (at most 6 more settings each), as the
//    calibration refines its coarse scan.
//
// Rule. A fixed setting is admitted only if its offset-averaged violation rate
// (EpisodeResult::offset_violation_rate) is at or below the greedy's on that seed; among the
// greedy and the admitted settings, the most completed-step tokens wins (ties: the greedy,
// then the setting run first). Consequence, per seed: no setting of that grid that breaks
// no more windows (offset mean) than the greedy makes more completed-step tokens than the
// look-ahead. It is a reference, not a bound (flexwatt quotes no bound: docs/control.md, "No token
// bound"): settings off the grid and schedules that are neither greedy nor fixed may do better.
//
// Execution: the chosen plan is carried out by LookaheadController, which replays the
// greedy's recorded decisions (the loop, plant and limiter are deterministic, so the replay
// is the imagined episode, bit for bit; the search is not run twice) or holds the setting.
// Cost per episode: one greedy episode plus fixed_candidates^actuators (+ up to 6 per
// actuator) plain episodes.

#include <cstdint>
#include <string>
#include <vector>

#include "control/control_loop.hpp"
#include "controllers/oracle_controller.hpp"

namespace fw {

struct LookaheadPlanConfig {
  OracleConfig greedy;        // its actuators are the fixed settings' actuators too
  int fixed_candidates = 12;  // grid rungs per actuator; 0: no fixed setting (greedy alone)
  BudgetSchedule budget;      // the episode's schedule (non-empty)
  LoopConfig loop;            // the real episode's sample period, duration and history
  LimiterConfig limiter;      // the real episode's limiter
};

struct LookaheadPlan {
  bool fixed = false;              // a fixed setting won
  std::vector<double> fractions;   // when fixed: the ladder fraction per actuator
  std::vector<Command> decisions;  // when not fixed: the greedy's commands, in order
  double greedy_completed_tokens = 0, greedy_offset_rate = 0;
  double completed_tokens = 0, offset_rate = 0;  // of the chosen plan
  int fixed_tried = 0, fixed_admitted = 0;       // grid settings run, admitted
  int refined_tried = 0;                         // settings run by the refinement
  // "greedy", or the fixed setting as "caps=310,group_size=16" (job 0's values).
  std::string description;
};

// The grid of ladder fractions for one actuator (job 0's ladder, static calibration's rungs),
// ascending, without duplicates. REQUIRES: candidates >= 2.
std::vector<double> fixed_grid_fractions(const PlantInfo& info, const Actuator& a, int candidates);

// Runs the greedy and every fixed setting of the grid on make_plant(seed) and picks by the
// rule above. Errors: an episode that fails, an empty factory result.
Result<LookaheadPlan> plan_lookahead(const PlantFactory& make_plant, const LookaheadPlanConfig& cfg,
                                     uint64_t seed);

// Carries out a plan (see above). Claims the plan's actuators; period: the greedy's.
class LookaheadController : public Controller {
 public:
  LookaheadController(std::vector<Actuator> actuators, double period_s, LookaheadPlan plan)
      : actuators_(std::move(actuators)), period_s_(period_s), plan_(std::move(plan)) {}
  std::string name() const override { return "lookahead"; }
  double period_s() const override { return period_s_; }
  void reset(const PlantInfo&) override { next_ = 0; }
  Command update(const Observation& obs) override;
  ActuatorSet claims() const override;

 private:
  std::vector<Actuator> actuators_;
  double period_s_;
  LookaheadPlan plan_;
  size_t next_ = 0;  // next recorded decision
};

// The command of a fixed setting: every job's actuator a at ladder fraction fractions[a],
// everything else as uncontrolled.
Command fixed_setting_command(const Observation& obs, const std::vector<Actuator>& actuators,
                              const std::vector<double>& fractions);

}  // namespace fw

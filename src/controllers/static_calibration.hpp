#pragma once
// Calibration of the static baseline: the largest fixed setting of the actuator whose
// worst trailing window mean (windows of the budget's window_s ending at every sample, every
// budget unit; so every tumbling window at any phase) stayed at or under the budget in full
// episodes on every calibration seed. The caller supplies seeds
// disjoint from its evaluation seeds, and a factory that builds a fresh plant per seed
// (control/ knows no concrete plant).
//
// Search: rungs of job 0's ladder (every job takes the same ladder fraction), scanned from
// the top down over at most max_candidates evenly spread rungs; between the first safe rung
// and the unsafe one above it, bisection (assumes power grows with the setting there).
// When no rung is safe, the lowest rung, with found = false.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "control/actuator.hpp"
#include "control/plant.hpp"
#include "control/safety_limiter.hpp"
#include "vocab/budget.hpp"

namespace fw {

struct StaticCalibrationConfig {
  Actuator actuator;
  std::vector<uint64_t> seeds;  // non-empty
  double duration_s = 600;
  double sample_period_s = 0.5;
  LimiterConfig limiter;
  int max_candidates = 12;
  KnobValues hold = kNoKnobs;  // knobs pinned while calibrating (StaticController)
};

struct StaticCalibration {
  double fraction = 0;     // of the ladder, for StaticController
  double value = 0;        // job 0's setting at that fraction
  double worst_ratio = 0;  // worst window mean / budget at that setting, over the seeds
  bool found = false;
  int episodes = 0;  // calibration episodes run
  // Mean tokens of completed steps per calibration episode at that setting (all seeds run
  // only when it is safe; 0 otherwise). Used to pick among actuators (prepare_static()).
  double completed_tokens = 0;
};

// The coarse grid of a ladder of n rungs: at most `candidates` (clamped to [2, max(2, n)])
// rungs spread evenly from 0 to n - 1, ascending, without duplicates. Shared by the
// calibration's scan and the look-ahead's fixed settings.
std::vector<int> coarse_rungs(int n, int candidates);

Result<StaticCalibration> calibrate_static(const PlantFactory& make_plant,
                                           const BudgetSchedule& budget,
                                           const StaticCalibrationConfig& cfg);

// One calibration episode of a setting: its worst window mean / budget (windows of the
// budget's window_s) and its tokens of completed steps.
struct CalibrationEpisode {
  double worst_ratio = 0;
  double completed_tokens = 0;
};
Result<CalibrationEpisode> calibration_episode(const PlantFactory& make_plant,
                                               const BudgetSchedule& budget,
                                               const StaticCalibrationConfig& cfg, double fraction,
                                               uint64_t seed);

// The joint search (the strongest fixed setting over several actuators at once): every
// actuator in `actuators` is set together. The inner actuator (caps when listed, else the
// last knob) is calibrated by calibrate_static() at each point of the outer knobs; the outer
// knobs take absolute values, the same for every job (clamped to each job's range), on the
// union of the jobs' ladders. Search, in this order (each point's inner calibration is
// cached, so a point is never run twice):
//   1. the per-actuator optimum of each actuator alone (the old single-actuator static:
//      other knobs at their configured values, caps at default), as seeds of the search;
//   2. a coarse joint grid: coarse_rungs(n, grid) of every outer knob's ladder (knobs
//      alone, by default: every rung, since a point costs at most one episode a seed and a
//      pattern search from a 5-point grid was measured 15 % short of the exhaustive grid on
//      72B; with the cap, 5, measured equal to the exhaustive grid on 7B and 72B);
//   3. a pattern search from the best point so far: ± step rungs on each outer knob, the
//      step starting at the coarse grid's spacing and halving to 1 rung, until no
//      neighbour at 1 rung gains.
// The best point is the safe one (worst trailing window ≤ budget on every calibration
// seed) with the most mean completed-step tokens on the calibration seeds.
struct JointCalibrationConfig {
  StaticCalibrationConfig base;     // seeds, duration, limiter, inner candidates, pinned knobs
  std::vector<Actuator> actuators;  // the joint set (knobs, caps); pinned knobs excluded
  // Coarse points per outer knob; 0 = auto: 5 with the cap inner, and with knobs alone every
  // rung (the exhaustive grid) when it has at most kExhaustiveKnobPoints points, else 9.
  int grid = 0;
  bool refine = true;  // step 3
};

inline constexpr double kExhaustiveKnobPoints = 4096;

struct JointPoint {
  KnobValues knobs = kNoKnobs;  // outer knob values (NaN: configured / not outer)
  StaticCalibration inner;      // the inner actuator's calibration at those knobs
};

struct JointCalibration {
  bool found = false;
  Actuator inner;               // the calibrated actuator
  KnobValues hold;              // pins plus the best outer knob values (StaticController's hold)
  StaticCalibration best;       // the inner calibration at the best point
  int episodes = 0;             // calibration episodes run, all points
  int points = 0;               // inner calibrations run
  int grid_points = 0;          // of which on the coarse grid (step 2)
  int grid = 0;                 // the coarse grid's points per knob (cfg.grid, auto resolved)
  double grid_best_tokens = 0;  // best safe tokens after steps 1-2 (before refinement)
  std::vector<JointPoint> per_actuator;   // step 1's optimum per actuator, in `actuators` order
  std::vector<Actuator> per_actuator_of;  // the actuator of each per_actuator entry
};

Result<JointCalibration> calibrate_static_joint(const PlantFactory& make_plant,
                                                const BudgetSchedule& budget,
                                                const JointCalibrationConfig& cfg);

// Worst window mean / budget (windows of window_s) of one episode of `setting`, or error.
Result<double> worst_window_ratio(const PlantFactory& make_plant, const BudgetSchedule& budget,
                                  const StaticCalibrationConfig& cfg, double fraction,
                                  uint64_t seed);

}  // namespace fw

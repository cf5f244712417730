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
#include "control/budget.hpp"
#include "control/plant.hpp"
#include "control/safety_limiter.hpp"

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

// Worst window mean / budget (windows of window_s) of one episode of `setting`, or error.
Result<double> worst_window_ratio(const PlantFactory& make_plant, const BudgetSchedule& budget,
                                  const StaticCalibrationConfig& cfg, double fraction,
                                  uint64_t seed);

}  // namespace fw

#pragma once
// The power-stabilisation study (issue #48; `flexwatt stabilize`; docs/stabilization.md): on a
// simulated site (sim/site_power.hpp), which fixed mitigation — or combination, or controller —
// keeps the site's power within a grid operator's limits, and at what cost.
//
// Arms, each run on the evaluation seeds 1..N:
// - none: the site unmitigated (the reference every figure is relative to);
// - caps, smoothing, fill, stagger: one mitigation alone, at its best fixed setting;
// - combined: the best fixed setting over the joint grid of every mitigation (the strongest
//   fixed baseline a controller arm must beat, DESIGN "Evidence rules");
// - controller arms (optional): a Controller in the control loop (control/control_loop.hpp)
//   over sim::SitePlant, on top of fixed base mitigations; it commands caps and the GPUs'
//   smoothing and fill (sim/site_plant.hpp). A write the plant refuses fails the run.
// "Best fixed setting": every candidate of the arm's grid (stability_scenario.hpp) runs on the
// calibration seeds 1000000+; a candidate meets the limits when it meets them on every one of
// them; among those the lowest mean cost % (StabilityObjective) wins; when none meets them, the
// candidate with the smallest worst ratio value/limit (over limits and seeds) stands for the arm,
// labelled so. Nothing is chosen on evaluation seeds.
//
// Metrics of a run, from the stability metrics library (analysis/stability.hpp) on the site
// trace: the largest ramp (up or down) at each window, in % of the unmitigated run's peak on the
// same seed per second; the band energy fraction of the whole trace; energy overhead % = (E /
// E_none − 1) × 100 (same horizon); throughput loss % = (1 − tokens / tokens_none) × 100; the
// same two over the steady stretch (tokens from the iteration end times, interpolated), and the
// oscillation left there (in-band RMS, % of that peak). Limits (StabilityLimitSpec): ramp at
// ramp_window_s <= max_ramp_frac_per_s × that peak, whole-trace band fraction <= max_band_frac.
// An arm meets the limits when every evaluation seed does. Arm figures: ramps, band and
// oscillation the worst over seeds, energy, throughput and cost the mean.
//
// Deterministic for a scenario and seeds, whatever the thread count. Runs: calibration seeds ×
// (1 + Σ candidates, controller candidates included) + evaluation seeds × (1 + arms).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "sim/site_power.hpp"
#include "studies/stability_scenario.hpp"

namespace fw::studies {

inline constexpr uint64_t kStabilityCalibrationSeed0 = 1000000;

using StabilityControllerMaker = std::function<std::unique_ptr<Controller>(uint64_t seed)>;

// One setting of a controller arm (a registry spec and its maker).
struct StabilityControllerCandidate {
  std::string spec;
  StabilityControllerMaker make;
};

// A controller arm: the feed-forward stabilising controller (controllers/
// stabilizing_controller.hpp) or any registered controller. With candidates, the study chooses
// among them on the calibration seeds by the fixed arms' rule (the cheapest that meets the
// limits on every calibration seed, else the closest) and runs the chosen one on the
// evaluation seeds; make and spec are then the chosen candidate's.
struct StabilityControllerArm {
  std::string name;               // table row name
  StabilityControllerMaker make;  // one per run
  double sample_period_s = 0.5;   // the loop's tick (the controller's period rounds up to it)
  sim::SiteMitigations base;      // fixed mitigations under the controller
  std::string spec;               // as given (e.g. "static:cap=600"), for the report
  std::vector<StabilityControllerCandidate> candidates;  // empty: make as it is
};

struct StabilityStudyOptions {
  int eval_seeds = 3;   // seeds 1..N
  int calib_seeds = 2;  // seeds 1000000, 1000001, ...
  std::vector<std::string> arms = {"none", "caps", "smoothing", "fill", "stagger", "combined"};
  std::vector<StabilityControllerArm> controllers;
  int threads = 1;  // >= 1
  // Called after every run (from worker threads, serialised): runs done, runs in all.
  std::function<void(size_t done, size_t total)> progress;
};

struct StabilityRunMetrics {
  uint64_t seed = 0;
  double ref_peak_w = 0;  // the unmitigated run's peak on this seed
  double peak_w = 0, mean_w = 0, energy_j = 0;
  std::vector<double> ramp_pct_per_s;  // per limits.ramp_windows_s: max(up, down), % of ref peak
  double ramp_limit_pct_per_s = 0;     // at limits.ramp_window_s
  double band_frac = 0;                // whole trace (judged)
  double band_steady_frac = kUnset;    // the steady stretch (NaN: none)
  double osc_steady_pct = kUnset;      // in-band RMS on the steady stretch, % of ref peak
  double energy_overhead_pct = 0, throughput_loss_pct = 0;  // whole trace
  double steady_energy_pct = kUnset, steady_throughput_loss_pct = kUnset;
  double trace_cost_pct = 0, steady_cost_pct = kUnset;
  double cost_pct = 0;  // projected (StabilityObjective); = trace_cost_pct without a stretch
  double smoothing_burn_pct = 0, fill_pct = 0, stagger_burn_pct = 0;  // of E_none
  double tokens = 0;
  int64_t iterations = 0;
  bool meets = false;
  double worst_ratio = 0;  // max over limits of value / limit (<= 1 meets)
  double wall_s = 0;       // wall time of the simulation (a measurement, never a result)
  int64_t steps = 0;       // rank-steps simulated
  // A controller arm's decisions (update() calls; ControlLoop::decision_cost(): measurements).
  int64_t decisions = 0;
  double decision_wall_s = 0, decision_max_s = 0;  // summed, the longest
};

struct StabilityArmResult {
  std::string name, kind;  // kind: reference | fixed | controller
  std::string setting;     // the chosen setting, described
  sim::SiteMitigations chosen;
  int candidates = 0, candidates_meeting = 0;  // on the calibration seeds
  bool calibration_met = true;            // some candidate met the limits on every calibration seed
  std::vector<StabilityRunMetrics> runs;  // evaluation seeds
  // Over the evaluation seeds (see the header comment).
  std::vector<double> ramp_pct_per_s;
  double ramp_limit_pct_per_s = 0, band_frac = 0, band_steady_frac = kUnset;
  double osc_steady_pct = kUnset;                                         // worst seed
  double energy_overhead_pct = 0, throughput_loss_pct = 0, cost_pct = 0;  // mean over seeds
  double steady_energy_pct = kUnset, steady_throughput_loss_pct = kUnset;
  bool meets = false;
  // A controller arm's decisions over the evaluation runs (measurements): how many, their mean
  // and longest wall time, and the loop's period they are held against.
  int64_t decisions = 0;
  double decision_mean_s = 0, decision_max_s = 0, loop_period_s = 0;
};

struct StabilityStudyReport {
  const StabilityScenario* scenario = nullptr;
  StabilityStudyOptions options;
  std::vector<uint64_t> eval_seeds, calib_seeds;
  double energy_weight = 0;  // w of the cost %, from the calibration seeds' unmitigated runs
  std::vector<StabilityArmResult> arms;
  // Speed (measurements, not results): simulations run, their wall time summed, rank-steps.
  size_t runs = 0;
  double sim_wall_s = 0, study_wall_s = 0;
  int64_t rank_steps = 0;
};

// InvalidArgument naming the option: unknown arm, seeds < 1, threads < 1, controller arm
// without a maker, base mitigations the site cannot run.
Status validate(const StabilityScenario& s, const StabilityStudyOptions& o);

Result<StabilityStudyReport> run_stability_study(const StabilityScenario& s,
                                                 const StabilityStudyOptions& o);

// Metrics of one finished run against the unmitigated run on the same seed (exposed for tests
// and for a caller that runs the simulator itself). energy_weight: the cost's w.
Result<StabilityRunMetrics> stability_metrics(const StabilityScenario& s, const sim::SiteRun& run,
                                              const sim::SiteRun& none, double energy_weight);

// One run of a fixed setting, or of a controller arm (make non-empty) on sim::SitePlant;
// `decisions` (optional) gets the controller's decision count and wall times.
Result<sim::SiteRun> run_stability_arm(const StabilityScenario& s, const sim::SiteMitigations& m,
                                       const StabilityControllerArm* controller, uint64_t seed,
                                       StabilityRunMetrics* decisions = nullptr);

}  // namespace fw::studies

#pragma once
// Running controllers on the same seeds of a simulated scenario and summarising them:
// the engine behind `flexwatt eval` and `flexwatt demo`.
//
// Every (controller, seed) episode is independent and runs on its own plant; episodes are
// spread over threads, and results do not depend on the thread count.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/oversubscription.hpp"
#include "analysis/windows_curve.hpp"
#include "control/controller_spec.hpp"
#include "control/episode_metrics.hpp"
#include "eval/stats.hpp"
#include "registry/controller_registry.hpp"
#include "sim/scenario.hpp"

namespace fw::eval {

struct EvalRequest {
  sim::Scenario scenario;
  std::vector<ControllerSpec> specs;
  std::vector<uint64_t> seeds;
  std::string out_dir;             // empty: keep no traces; else DIR/<controller>/seed-<seed>/
  size_t traced_seeds = SIZE_MAX;  // with out_dir: keep traces of the first N seeds only
  int threads = 2;
  bool shield = false;
  bool shield_on_caps = false;  // with shield: it acts on the caps even where knobs exist
  // The row every other row is compared with: a label (the spec as written) or a registry
  // name (its first row). Empty: the first row named "static", if any. It is never a row
  // that reports an unsafe calibration (run_evaluation() refuses one).
  // "auto": each row against the joint static over the actuators its controller claims
  // (Controller::claims(); a row claiming none: plain `static`, every actuator): a listed
  // calibrated static without pins that searched exactly that set, else one appended as an
  // extra row (after the listed ones).
  std::string reference;
  // Metric windows: the windows curve. The table and "violation_rate" show 0.5, 30 and 300 s.
  std::vector<double> windows_s = kDefaultCurveWindowsS;
  CostOptions cost;
  // The per-GPU cap study's columns (docs/caps.md): empty for none; else the row every row's
  // energy saved, throughput lost and EDP change are measured against, seed by seed — a label
  // or registry name in specs, or "uncontrolled", then run on the same seeds as an unlisted
  // baseline when specs lack it (its traces are kept like a row's when out_dir is set).
  std::string energy_vs;
};

struct ControllerSummary {
  std::string label;  // the spec as written, e.g. "pid:kp=0.5"
  std::string name;   // the registry name, e.g. "pid"
  Stat tokens, energy_j, tokens_per_mwh, interventions;
  std::vector<Stat> violation_rate;  // per EvalRequest::windows_s
  Stat sliding_violation_rate;       // trailing budget-window mean (EpisodeResult)
  Stat offset_violation_rate;        // tumbling, mean over kWindowOffsets window phases
  // Progress: tokens of completed steps (the headline), steps per hour, tokens per step.
  Stat completed_tokens, steps_per_hour, tokens_per_step;
  Stat steps_violating;  // share of completed steps (analysis/steps_violating.hpp)
  // Windows curve pooled over seeds (tolerance 0): shortest window at which the budget held.
  WindowsCurve curve;
  // Node power at kNodeWindowS windows: peak share of nameplate and the supported
  // oversubscription ratio (tolerance 0), per seed.
  Stat peak_share_of_nameplate, oversubscription_ratio;
  // With EvalRequest::energy_vs, per seed against that row's episode (eval/cap_episode.hpp,
  // with completed-step tokens): fractions, energy per token saved, tokens lost, EDP change.
  Stat energy_saved, throughput_lost, edp_change;
  CostReport cost;  // at the mean energy, power and tokens across seeds
  nlohmann::json notes;
  // Wall time of preparing the row (static's calibration search), s: in the table, not in the
  // JSON (which stays byte-identical run to run).
  double prepare_s = 0;
  // Decision cost: wall µs per call of the controller's update(), pooled over the row's
  // episodes (ControlLoop::decision_wall_s / decisions; one core of this machine, whatever
  // else it runs), and the calls. In the table only, like prepare_s.
  double decision_us = 0, decisions = 0;
  // The worst call and the 99th percentile (within 5 %, conservative: DecisionCost), wall; the
  // calling thread's CPU per call (mean, max, p99: waits and other threads' work are not in it).
  double decision_max_us = 0, decision_p99_us = 0;
  double decision_cpu_us = 0, decision_cpu_max_us = 0, decision_cpu_p99_us = 0;
  std::vector<EpisodeResult> episodes;  // one per seed, in seed order
};

struct EvalReport {
  std::vector<ControllerSummary> controllers;
  std::vector<uint64_t> calibration_seeds;
  std::vector<double> windows_s;
  double duration_s = 0;           // episode length; windows longer than it are reported as null
  int reference = -1;              // row index of the reference (EvalRequest::reference), or -1
  bool auto_reference = false;     // EvalRequest::reference "auto": per row, row_reference
  std::vector<int> row_reference;  // with auto_reference: each row's reference row
  // The reference row of `row` (row_reference with auto, else reference), or -1.
  int reference_of(size_t row) const;
  std::string energy_vs;  // the energy baseline's label (EvalRequest::energy_vs), or empty
  double wall_s = 0;

  // Index of window_s in windows_s, or -1.
  int window_index(double window_s) const;
  // Index of the first controller with this registry name, or -1.
  int find(const std::string& name) const;
  // The look-ahead reference's row ("lookahead", or its alias "oracle"), or -1.
  int find_lookahead() const;
  // The JSON of `flexwatt eval --json`.
  nlohmann::json to_json(const EvalRequest& req) const;
};

// Where an episode's trace goes: out_dir/<label made path-safe>/seed-<seed>.
std::string episode_trace_dir(const std::string& out_dir, const std::string& label, uint64_t seed);

// Called after each finished episode with (done, total).
using ProgressFn = std::function<void(size_t, size_t)>;

// Called before each listed controller is prepared (calibration, a policy's load) with
// (index, count, its label as written): the part of a run before the first episode.
using PrepareFn = std::function<void(size_t, size_t, const std::string&)>;

Result<EvalReport> run_evaluation(const EvalRequest& req, const ProgressFn& progress = {},
                                  const PrepareFn& prepare = {});

// One controller's summary across its episodes (one per seed, in seed order): the Stat of
// each metric, the windows curve pooled over seeds, the oversubscription of the node power
// at kNodeWindowS windows against info's nameplate, and the cost at the mean energy, power
// and tokens. label, name and notes are left for the caller.
ControllerSummary summarise(const std::vector<EpisodeResult>& episodes,
                            const std::vector<double>& windows_s, const PlantInfo& info,
                            const CostOptions& cost);

}  // namespace fw::eval

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

#include "cli/controller_registry.hpp"
#include "control/controller_spec.hpp"
#include "control/episode_metrics.hpp"
#include "sim/scenario.hpp"

namespace fw::cli {

// Mean and 95 % confidence half-width (Student t) across seeds; ci95 NaN below 2 seeds.
struct Stat {
  double mean = 0, ci95 = kUnset;
};
Stat stat_of(const std::vector<double>& v);
nlohmann::json to_json(const Stat& s);

struct EvalRequest {
  sim::Scenario scenario;
  std::vector<ControllerSpec> specs;
  std::vector<uint64_t> seeds;
  std::string out_dir;             // empty: keep no traces; else DIR/<controller>/seed-<seed>/
  size_t traced_seeds = SIZE_MAX;  // with out_dir: keep traces of the first N seeds only
  int threads = 2;
  bool shield = false;
  std::vector<double> windows_s = kDefaultWindowsS;  // metric windows; the first three are
                                                     // reported as 0.5 / 30 / 300
};

struct ControllerSummary {
  std::string label;  // the spec as written, e.g. "pid:kp=0.5"
  std::string name;   // the registry name, e.g. "pid"
  Stat tokens, energy_j, tokens_per_mwh, interventions;
  std::vector<Stat> violation_rate;  // per EvalRequest::windows_s
  nlohmann::json notes;
  std::vector<EpisodeResult> episodes;  // one per seed, in seed order
};

struct EvalReport {
  std::vector<ControllerSummary> controllers;
  std::vector<uint64_t> calibration_seeds;
  std::vector<double> windows_s;
  double wall_s = 0;

  // Index of the first controller with this registry name, or -1.
  int find(const std::string& name) const;
  // The JSON of `flexwatt eval --json`.
  nlohmann::json to_json(const EvalRequest& req) const;
};

// Where an episode's trace goes: out_dir/<label made path-safe>/seed-<seed>.
std::string episode_trace_dir(const std::string& out_dir, const std::string& label, uint64_t seed);

// Called after each finished episode with (done, total).
using ProgressFn = std::function<void(size_t, size_t)>;

Result<EvalReport> run_evaluation(const EvalRequest& req, const ProgressFn& progress = {});

// The human table of `flexwatt eval` (labelled simulated).
std::string format_eval_table(const EvalRequest& req, const EvalReport& report);

}  // namespace fw::cli

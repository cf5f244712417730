#pragma once
// Scenarios: YAML files (scenarios/*.yaml) that describe a simulated cluster — GPUs, jobs,
// budget, duration — and the plant built from them. Every key has a documented default
// (docs/simulator.md); unknown keys and out-of-range values are errors naming
// file:line: field.
//
//   auto s = sim::load_scenario("scenarios/grpo-7b-a100.yaml", {"jobs.0.group_size=4"});
//   auto plant = sim::make_plant(*s, /*seed=*/1);

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/plant.hpp"
#include "core/status.hpp"
#include "sim/cluster.hpp"
#include "sim/fleet_start.hpp"
#include "sim/workload.hpp"
#include "vocab/budget.hpp"

namespace fw::sim {

struct Scenario {
  std::string name;
  std::string description;
  std::string path;                    // file it was loaded from
  std::vector<std::string> overrides;  // --set assignments applied, in order
  double duration_s = 600;
  double sample_period_s = 0.5;
  SimParams sim;
  std::vector<ClusterGpu> gpus;  // one per GPU, plant order
  std::vector<JobSpec> jobs;
  BudgetSchedule budget;  // at least one entry, the first at start_s 0
  // `fleet: {start: manual|aligned|random|staggered}` (default manual): how the jobs' step
  // cycles line up at the start (fleet_start.hpp). Offsets are resolved per run seed by
  // make_cluster().
  StartStrategy fleet_start = StartStrategy::kManual;

  // The parsed parameters (GPU models, jobs and knobs, budget) for meta.json.
  nlohmann::json to_json() const;
};

// A numeric scenario key with a fixed default and range, as declared (for listings and
// docs). Keys whose default or range depends on others (tp, iter_s, the knobs and their
// ranges, GPU caps, budget entries) are read by their sections' code and are not listed.
struct ScenarioKey {
  std::string section;  // "" (top level), "sim", "jobs[] (grpo)", "jobs[] (pretrain)"
  std::string name;
  double def, lo, hi;
  std::string help;
};
std::vector<ScenarioKey> scenario_keys();

// Loads a scenario file and applies `overrides` ("key.path=value", as `--set`).
Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides);
// Same, from text (`name` is used in messages).
Result<Scenario> parse_scenario(const std::string& text, const std::string& name,
                                const std::vector<std::string>& overrides);

// The jobs with their phase offsets (start_offset_s) resolved for the run seed.
std::vector<JobSpec> resolve_jobs(const Scenario& s, uint64_t seed);

// The simulated plant (a sim::Cluster) for a scenario and run seed (jobs from resolve_jobs).
std::unique_ptr<Cluster> make_cluster(const Scenario& s, uint64_t seed);
std::unique_ptr<fw::Plant> make_plant(const Scenario& s, uint64_t seed);

// The scenario as seen from time t0_s on (a calibration run started at t0_s): completion-length
// curves shifted by t0_s; arrivals and departures after t0_s move with it; a job gone by t0_s
// never starts.
Scenario shifted_to(const Scenario& s, double t0_s);

}  // namespace fw::sim

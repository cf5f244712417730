#pragma once
// The simulator as a NodePlant (backend sim:PATH): the real-time adapter of the agent. A
// simulated cluster (sim::make_plant of scenario PATH, with the run seed and --set overrides)
// is moved to each read's time, which the wall-clock driver (runtime/realtime_driver.hpp)
// schedules at the sample period (time_scale simulated seconds per wall second). Its time is
// its own: a missed deadline is caught up, not skipped, so the episode is `eval`'s for the
// seed whatever the machine's load. Caps go through an in-memory PowerCapActuator (validated
// against the simulated GPUs' ranges; the enforced cap is what the simulator gets); the jobs
// are the scenario's, fixed, and channel job i mirrors simulated job i (it is handed the knobs
// written; its report age is what the loop sees). defaults() carries the scenario's budget,
// its episode length and a factory of fresh simulated plants (controller calibration).
//
// This is the only place outside sim/ and the CLI that constructs the simulator: nothing of
// sim/ shows in this header.

#include <memory>
#include <string>
#include <vector>

#include "runtime/node_plant.hpp"

namespace fw {

// Loads scenario `scenario_path` (cfg.sim_overrides applied) and opens it for cfg.seed.
// `jobs` may be null and must outlive the plant.
Result<std::unique_ptr<NodePlant>> open_sim_node_plant(const NodePlantConfig& cfg,
                                                       const std::string& scenario_path,
                                                       JobChannel* jobs);

// The same adapter over a simulated plant the caller built (`plant`, owned; fleet-sim's nodes:
// a node scenario resized, phases drawn, its job paused and resumed by the node). caps_w[g]
// (NaN or missing: the GPU's default) is the cap in force at the start; no defaults() (no
// scenario budget, episode length or model plant). cfg: seed, time_scale and
// sim_knobs_without_job are read.
std::unique_ptr<NodePlant> adopt_sim_plant(const NodePlantConfig& cfg, std::unique_ptr<Plant> plant,
                                           const std::vector<double>& caps_w, JobChannel* jobs);

}  // namespace fw

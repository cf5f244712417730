#pragma once
// A scenario run on the simulator with no controller (`flexwatt sim`): knobs and caps stay as
// the scenario sets them; every sample_period_s up to duration_s is written to a trace
// directory. Bit-for-bit deterministic for a seed.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::eval {

struct SimulationRequest {
  sim::Scenario scenario;
  uint64_t seed = 1;
  std::vector<std::string> overrides;  // recorded in the trace's meta.json
  std::string out_dir;                 // trace directory to write
};

// Called every 2000 samples with (simulated time, duration), s.
using SimulationProgressFn = std::function<void(double, double)>;

// Writes the trace (gpus.csv, jobs.csv, meta.json) and returns the summary: simulated,
// scenario, seed, duration_s, samples, out, gpus [{gpu, mean_power_w}], mean_total_power_w,
// jobs [{job, tokens_total, steps_total}] (the JSON of `flexwatt sim --json`).
Result<nlohmann::json> run_simulation(const SimulationRequest& req,
                                      const SimulationProgressFn& progress = {});

}  // namespace fw::eval

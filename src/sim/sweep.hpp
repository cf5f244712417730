#pragma once
// Power-cap sweeps on the simulator: run one job of a scenario with all its GPUs capped
// at each cap in turn (every point from the same seed) and measure its throughput and
// realized power — the simulated counterpart of the PFI paper's sweeps (docs/sources.md §1b).

#include <cstdint>
#include <vector>

#include "analysis/pfi.hpp"
#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::sim {

struct SweepOptions {
  double warmup_s = 60;    // simulated seconds dropped before measuring
  double measure_s = 600;  // simulated seconds measured
  uint64_t seed = 1;
};

// One point per cap: throughput = tokens/s of job `job` over the measured span (simulated),
// power_w = mean sensor power summed over the job's GPUs. Caps are clamped to the device.
Result<std::vector<PfiPoint>> sweep_caps(const Scenario& s, int job,
                                         const std::vector<double>& caps_w,
                                         const SweepOptions& opt);

}  // namespace fw::sim

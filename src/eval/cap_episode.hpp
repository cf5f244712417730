#pragma once
// One simulated episode for the per-GPU cap study (docs/caps.md) and its score against the
// uncapped run of the same scenario and seed.
//
// Normalisation (exact): with E, N the GPU energy (J, every GPU of the plant) and trained
// tokens of the run over the episode, and E0, N0 those of the uncapped run (same scenario,
// same seed, no controller):
//   energy_saved    = 1 − (E/N) / (E0/N0)      energy per token, so a slower run is not
//                                              credited for the work it did not do
//   throughput_lost = 1 − N / N0               tokens in the same wall time
//   edp_change      = (E/N)·(N0/N) / ((E0/N0)·1) − 1 = (1 − saved)/(1 − lost) − 1
//                                              energy-delay product of a fixed amount of work
//   reward(α)       = energy_saved − α · throughput_lost   (what `train --task caps` maximises)

#include <cstdint>

#include "control/controller.hpp"
#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::eval {

struct CapEpisode {
  double energy_j = 0;
  double tokens = 0;
  double duration_s = 0;
};

struct CapScore {
  double energy_saved = 0;     // fraction
  double throughput_lost = 0;  // fraction
  double edp_change = 0;       // fraction
  double reward(double alpha) const { return energy_saved - alpha * throughput_lost; }
};

// Runs the scenario for its duration_s on seed through ControlLoop with `controller`
// (null: no controller, caps at the scenario's values). Deterministic.
Result<CapEpisode> run_cap_episode(const sim::Scenario& scenario, uint64_t seed,
                                   Controller* controller);

CapScore score_against(const CapEpisode& run, const CapEpisode& uncapped);

}  // namespace fw::eval

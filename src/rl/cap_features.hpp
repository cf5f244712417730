#pragma once
// Per-GPU observation of the capnet controller (docs/caps.md): what one GPU's sensors and
// its job's progress counters say over the trailing decision period. Meter-blind: nothing
// here depends on the phase of a budget window (no window entries, no budget at all).
//
// Computed over the "busy" samples of the span (the GPU's job in a compute or communication
// phase of a training step: forward, backward, all-to-all, all-reduce, optimizer, generate,
// score, update), so a checkpoint or data stall does not read as spare headroom. A GPU whose
// span holds no busy sample is marked not busy and gets no decision.
//
// Entries (kCapObsDim), each O(1):
//   power_rel_tdp   mean busy power / nameplate
//   cap_rel_tdp     newest enforced cap / nameplate
//   headroom_rel    (cap − mean busy power) / nameplate
//   clock_rel       mean busy SM clock / the highest SM clock this GPU has shown
//   clock_gap_rel   (mean busy clock − the slowest GPU of its job's) / highest clock: the share
//                   of time this GPU would wait at the next synchronisation (0 for the slowest)
//   sm_util         mean busy SM utilisation, 0..1
//   temp_rel        newest temperature / 100 °C
//   busy_share      busy samples / samples in the span
//   step_rate_rel   job steps per s over the trailing 120 s / the highest such rate seen
//   job_size        log2(GPUs of the job + 1) / 7
//
// State across decisions (per GPU: highest clock; per job: highest step rate) lives in
// CapFeatureState, owned by the caller and cleared per episode.

#include <cstdint>
#include <vector>

#include "control/observation.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

inline constexpr int kCapObsDim = 10;
ObsSpec cap_obs_spec();

struct CapFeatureState {
  std::vector<double> max_clock_mhz;  // per GPU
  std::vector<double> best_rate;      // per job, steps per s
  // Scratch (sized by reset, reused: no allocation per decision).
  std::vector<double> sum_p, sum_c, sum_u;
  std::vector<int> n_busy, n_all;
  std::vector<double> job_min_clock;
  void reset(const PlantInfo& info);
};

// Writes kCapObsDim values per GPU into out (row i at out + i·kCapObsDim) for every GPU of
// the plant, and busy[i] = 1 when GPU i had a busy sample in the trailing span_s. GPUs
// without a job get busy 0. REQUIRES: state.reset(*obs.plant) once per episode; out holds
// plant GPUs × kCapObsDim values and busy as many entries. Allocates nothing.
void build_cap_features(const Observation& obs, double span_s, CapFeatureState& state, double* out,
                        uint8_t* busy);

}  // namespace fw::rl

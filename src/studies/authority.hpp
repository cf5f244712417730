#pragma once
// Actuator authority: how much each workload knob of a job moves the job's power, measured by
// sweeping the knob over its range with everything else fixed (the "occupancy versus volume"
// sweep of docs/sources.md §1a).
//
// For each setting v of a knob and each seed: a fresh plant, a Command at t = 0 setting the
// knob to v (other knobs and caps untouched, held for the whole run), then read() every
// sample_period_s until duration_s. Samples at t ≤ warmup_s are dropped. Figures per run,
// over the job's GPUs summed:
// - mean_power_w: mean of the samples;
// - peak_window_w: the largest mean of tumbling window_s windows (windows.hpp rules);
// - peak_sample_w: the largest single sample;
// - tokens_per_s: growth of the job's tokens_total over the measured span / the span.
// A setting's figures are the means over seeds.
//
// Per knob, for figure f: swing = (max over settings of f − min over settings of f) / f at
// the knob's maximum setting (for a monotone response that is |f(max) − f(min)| / f(max)).
// throughput_ratio = highest tokens_per_s over the settings / lowest (NaN when the lowest
// is 0). A knob has authority when its mean-power swing ≥ threshold (default 0.10, a
// choice: below it a controller's action is lost among the phase swings of GRPO).
// Knobs are ranked by mean-power swing, largest first.
//
// Deterministic for a deterministic plant factory. Runs sum(settings) × seeds plants.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/plant.hpp"
#include "core/status.hpp"
#include "sim/scenario.hpp"

namespace fw::studies {

struct AuthorityOptions {
  int job = 0;                   // plant job index
  std::vector<Knob> knobs;       // empty: every knob the job exposes
  double duration_s = 600;       // > warmup_s
  double warmup_s = 0;           // ≥ 0
  double sample_period_s = 0.5;  // > 0
  double window_s = 30;          // peak-window length, > 0
  int points = 5;                // settings per knob, ≥ 2 (fewer when the range has fewer)
  int seeds = 1;                 // ≥ 1
  uint64_t seed = 1;             // first seed; seeds seed, seed+1, …
  double threshold = 0.10;       // mean-power swing for authority, 0..1
};

struct AuthorityPoint {
  double value = 0;  // knob setting
  double mean_power_w = 0, peak_window_w = 0, peak_sample_w = 0, tokens_per_s = 0;
};

struct KnobAuthority {
  Knob knob = Knob::kGenConcurrency;
  std::vector<AuthorityPoint> points;  // by setting, ascending
  double mean_swing = 0;               // fractions (0.2 = 20 %)
  double peak_window_swing = 0;
  double peak_sample_swing = 0;
  double throughput_ratio = 0;
  bool has_authority = false;
  int rank = 0;  // 1 = most mean-power authority
};

struct AuthorityReport {
  bool simulated = true;
  std::string job;  // job name
  int job_gpus = 0;
  AuthorityOptions options;
  std::vector<KnobAuthority> knobs;  // ranked
};

// A fresh plant for a seed. Every call must give an independent plant in its initial state.

// The settings swept for a range: min, max and points−2 evenly spaced values between,
// rounded to the range's step, duplicates removed. REQUIRES: r.available.
std::vector<double> knob_settings(const KnobRange& r, int points);

// Validates options against the plant's info (job index, knob availability, numbers):
// InvalidArgument naming the option.
Status validate(const AuthorityOptions& o, const PlantInfo& info);

Result<AuthorityReport> sweep_authority(const PlantFactory& make, const AuthorityOptions& o,
                                        bool simulated);
// The simulator for a scenario (simulated = true).
Result<AuthorityReport> sweep_authority(const sim::Scenario& s, const AuthorityOptions& o);

}  // namespace fw::studies

#pragma once
// A power-stabilisation study's scenario (scenarios/stability/*.yaml; docs/stabilization.md
// lists every key): the site (sim/site_power.hpp), the limits it must meet, the grids the fixed
// arms are searched over on calibration seeds, and the cost weights that rank settings that
// meet the limits.
//
// Errors name the file, line and field ("site.yaml:12: search.cap_frac.2: ..."). `--set
// key=value` overrides (core/config.hpp) are applied before parsing.

#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/site_power.hpp"

namespace fw::studies {

struct StabilityLimitSpec {
  double max_ramp_frac_per_s = 0.10;                  // of the unmitigated site's peak, per second
  double ramp_window_s = 1;                           // the window the ramp limit is judged at
  std::vector<double> ramp_windows_s = {0.1, 1, 10};  // reported (ramp_window_s added)
  double band_lo_hz = 0.1, band_hi_hz = 5;
  double max_band_frac = 0.20;  // of the detrended variation of the whole trace
  // A stretch of steady training (from, to] s, free of start, stop and checkpoints for every
  // setting searched: the steady-state costs, the oscillation's amplitude and the band fraction
  // there are reported (not judged: a near-flat stretch has most of its tiny remaining
  // variation in the band, so its fraction says nothing about amplitude). to <= from: none.
  double steady_from_s = 0, steady_to_s = 0;
};

// Smoothing settings searched: the Cartesian product of the lists (plus "off" when include_off).
struct SmoothingGrid {
  std::vector<double> floor_frac, ramp_up_w_per_s, ramp_down_w_per_s, hysteresis_ms;
  bool include_off = false;
  std::vector<sim::SmoothingSettings> settings() const;
};

struct MitigationGrid {
  std::vector<double> cap_frac;  // 1: none
  SmoothingGrid smoothing;
  std::vector<double> fill_frac;  // 0: none
  std::vector<double> stagger_s;  // 0: none
};

struct StabilitySearch {
  std::vector<double> cap_frac, fill_frac, stagger_s;  // each alone
  SmoothingGrid smoothing;                             // alone
  MitigationGrid combined;  // jointly (arm_candidates adds every single arm's settings)
  // The stabilize controller arm's settings (registry specs, `search.stabilize`), chosen on
  // the calibration seeds like a fixed arm's; empty without a smoothing model.
  std::vector<std::string> stabilize;
};

// Settings meeting the limits are ranked by a projected cost %, in % of what a GPU-hour costs:
//   C = throughput loss % + w × energy overhead %,  w = usd_per_kwh × the unmitigated mean kW
//   per GPU / usd_per_gpu_hour (energy is a few % of a GPU-hour's cost);
//   cost = C_steady + (C_trace − C_steady) × T / (events_every_h × 3600 s)
// with C_trace over the whole trace, C_steady over the steady stretch and T the job's scheduled
// training span in the trace: the trace's events (its start, stop and checkpoints), whose costs
// are one-off, recur every events_every_h hours of training instead of every T seconds.
struct StabilityObjective {
  double usd_per_gpu_hour = 2.0;  // assumption (docs/stabilization.md)
  double usd_per_kwh = 0.08;      // analysis/cost.hpp's default (docs/sources.md §1a)
  double events_every_h = 0.5;    // assumption: a checkpoint every 30 min (docs/stabilization.md)
};

struct StabilityScenario {
  std::string name, description, path;
  std::vector<std::string> overrides;
  sim::SiteSpec site;
  StabilityLimitSpec limits;
  StabilitySearch search;
  StabilityObjective objective;
};

Result<StabilityScenario> load_stability_scenario(const std::string& path,
                                                  const std::vector<std::string>& overrides);
Result<StabilityScenario> parse_stability_scenario(const std::string& text, const std::string& name,
                                                   const std::vector<std::string>& overrides);

// The settings of each searched arm: "caps", "smoothing", "fill", "stagger", "combined" (the
// joint grid plus every single arm's settings, duplicates dropped).
std::vector<sim::SiteMitigations> arm_candidates(const StabilitySearch& s, const std::string& arm);

}  // namespace fw::studies

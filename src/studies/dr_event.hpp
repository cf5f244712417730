#pragma once
// A demand-response event for `flexwatt dr replay` (docs/flexibility.md, "dr replay"): the site's
// jobs (each a measured cap curve, a tier and whether it may pause) and the grid's target over
// time. Loaded from YAML (JSON accepted); errors name file:line: field.
//
//   sample_period_s: 0.5
//   duration_s: 24000
//   baseline_w: measured        # the uncapped site's mean before the event, or watts
//   jobs:
//     - {name: ft, gpus: 32, sweep_csv: sweeps.csv, sweep_job: ft_llama_8b_dolly, tier_min: 0.75}
//     - {name: pt, gpus: 48, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.5,
//        pausable: true}
//   event:
//     steps:                    # times in s from the start; depth = fraction of baseline below
//       - {start_s: 5400, ramp_s: 900, depth: 0.25}
//     end_s: 17580
//     release_ramp_s: 840
//
// Optional keys (defaults in brackets; each default is an assumption or a fit the docs state):
//  - root: seed [1], tolerance_frac [0.01] (of baseline; the 1-minute scoring tolerance),
//    gpus_per_node [8], cap_lag_s [0.5] (first-order lag of a cap's effect; calibration.md
//    suggests 0.1–0.5 s), noise_tau_s [5] (correlation time of a node's draw around its level;
//    an assumption the field data cannot refine: they bound it under ~30 s), resume_s [120] (a
//    paused job's restart: no progress, half its draw), plant_error_frac [0] (the plant's jobs
//    draw their curve's power times 1 + u, u uniform in ±plant_error_frac, one draw per job from
//    the seed, below the cap; the loop keeps the curve: a rehearsal of curves that are off),
//    noise [field] (`field`: the keys below with their field-calibrated defaults; `quiet`: the
//    plant before issue 45 whatever the jobs say: every job's noise_frac_1min 0.005, no dips).
//  - job: baseline_w_per_gpu [the sweep's uncapped per-GPU power] (the sweep's power axis is
//    scaled to it), noise_frac_1min [kDrFieldNoiseFrac1min] (sd of the job's 1-minute mean
//    power / its level), dips [hourly, see below] (periodic checkpoint/eval dips: the job draws
//    `level` of its power for duration_s every period_s from phase_s; `none` or period_s 0: no
//    dips; a job with no `dips` key dips every kDrFieldDipPeriodS for kDrFieldDipDurationS at
//    kDrFieldDipLevel, job k of n first at (k + 0.5) / n of the period; a `dips` map's own
//    defaults: phase_s 0, duration_s kDrFieldDipDurationS, level kDrFieldDipLevel),
//    pausable [false].
//  - event: ramp_down_w_per_s, ramp_up_w_per_s [none]: the grid's limits on how fast the site may
//    move (the loop's setpoint is slew-limited by them).
// The field-calibrated defaults are scripts/fit_dr_noise.py's fit of the Phoenix field data
// (data/emerald-phoenix/, outside the DR events; docs/simulator.md "DR replay noise and dips";
// tests/cli/fit_dr_noise.sh fails when they drift apart): the jobs' noises are independent
// (no site-common component), so none is modelled.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::studies {

// Field-calibrated defaults (scripts/fit_dr_noise.py on data/emerald-phoenix/, issue 45):
// the per-job 1-minute sd that gives the APS site's measured 0.286 % for its six jobs combined
// as independent; hourly dips (spacing of one job's dips), level 0.39 (the lowest 1-minute mean
// of a dip: the largest level every observed dip allows), 43 s (median lost energy at that
// level).
inline constexpr double kDrFieldNoiseFrac1min = 0.0069;
inline constexpr double kDrFieldDipPeriodS = 3600;
inline constexpr double kDrFieldDipDurationS = 43;
inline constexpr double kDrFieldDipLevel = 0.39;
// The plant's noise correlation time: an assumption kept (1-minute means cannot resolve it).
inline constexpr double kDrNoiseTauS = 5;
// The quiet plant (the default before issue 45): 0.5 % per job, no dips.
inline constexpr double kDrQuietNoiseFrac1min = 0.005;

// The plant's noise and dips: `field` (the jobs' keys, field-calibrated defaults) or `quiet`.
enum class DrNoise { kField, kQuiet };
Result<DrNoise> parse_dr_noise(const std::string& name);

// One point of a job's measured cap curve (per GPU; t_rel = throughput / uncapped throughput).
struct DrCapPoint {
  double cap_w = 0;
  double power_w = 0;  // realized per-GPU power at the cap, scaled to the job's baseline
  double t_rel = 0;
};

struct DrDips {
  double period_s = 0;  // 0: none
  double phase_s = 0;
  double duration_s = kDrFieldDipDurationS;
  double level = kDrFieldDipLevel;
};

struct DrJobSpec {
  std::string name;
  int gpus = 0;
  std::string sweep_csv, sweep_job;  // as written; sweep_csv resolved against the event's folder
  std::vector<DrCapPoint> curve;     // cap ascending; the last is the uncapped point
  double tier_min = 0.5;             // whole-run performance floor, 0..1
  bool pausable = false;
  // In force (set_dr_noise): the job's own under `field`, the quiet plant's under `quiet`.
  double noise_frac_1min = kDrFieldNoiseFrac1min;
  DrDips dips;
  // The job's own: its keys, else the field-calibrated defaults.
  double field_noise_frac_1min = kDrFieldNoiseFrac1min;
  DrDips field_dips;
};

struct DrStep {
  double start_s = 0, ramp_s = 0, depth = 0;
};

struct DrEvent {
  std::string path;
  double sample_period_s = 0.5;
  double duration_s = 0;
  bool baseline_measured = true;
  double baseline_w = 0;  // when !baseline_measured
  std::vector<DrJobSpec> jobs;
  std::vector<DrStep> steps;  // start ascending
  double end_s = 0, release_ramp_s = 0;
  double ramp_down_w_per_s = 0, ramp_up_w_per_s = 0;  // 0: no limit
  double tolerance_frac = 0.01;
  uint64_t seed = 1;
  int gpus_per_node = 8;
  double cap_lag_s = 0.5, noise_tau_s = kDrNoiseTauS, resume_s = 120;
  double plant_error_frac = 0;
  DrNoise noise = DrNoise::kField;
};

// Puts the jobs' noise and dips of `mode` in force (the `noise` key; flexwatt dr replay
// --noise): field: each job's own (field_noise_frac_1min, field_dips); quiet: every job at
// kDrQuietNoiseFrac1min with no dips.
void set_dr_noise(DrEvent& ev, DrNoise mode);

Result<DrEvent> load_dr_event(const std::string& path);
Result<DrEvent> parse_dr_event(const std::string& text, const std::string& name,
                               const std::string& base_dir);

// Depth of the target below the baseline at time t (0 outside the event; linear ramps between
// steps and on release).
double dr_depth_at(const DrEvent& ev, double t_s);
// Hold spans: [start + ramp, next start or end_s) of each step.
struct DrHold {
  double from_s = 0, to_s = 0, depth = 0;
};
std::vector<DrHold> dr_holds(const DrEvent& ev);

// Per-GPU power and relative throughput of a job at a cap (linear between curve points,
// clamped), and the cap at which the job draws power_w per GPU.
double dr_power_at(const DrJobSpec& j, double cap_w);
double dr_t_rel_at(const DrJobSpec& j, double cap_w);
double dr_cap_for(const DrJobSpec& j, double power_w);

}  // namespace fw::studies

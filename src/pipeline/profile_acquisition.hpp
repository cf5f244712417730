#pragma once
// `flexwatt pipeline profile`: a stage profile (pipeline/stage_profile.hpp, the planner's
// format) from a running job's hook records (pipeline/timing_log.hpp) and the agent's per-GPU
// trace (pipeline/gpu_samples.hpp); and the cap probes that give it points at other clocks.
//
// Method (docs/pipeline-profile.md). For each rank, its GPU's trace rows are cut into cap
// windows (consecutive rows whose power_limit_w is the same within cap_tol_w); each window is
// measured from its first row + settle_s (the cap settling time) to its last row, [a, b]:
// - op times: the median duration of the rank's forward and of its backward ops lying wholly
//   in [a, b];
// - busy time: the rank's op intervals overlapped with [a, b];
// - the GPU's energy E over [a, b]: the difference of its energy counter at a and b (the trace
//   rows' power integrated by trapezoids where a counter is missing);
// - power while computing: P = (E − blocking_w · (b − a − busy)) / busy — the GPU draws
//   blocking_w while it waits (the planner's own model) and the same power in a forward and a
//   backward at one clock (an assumption: the 2 Hz trace cannot tell them apart);
// - clock: the median sm_clock_mhz of the rows in [a, b], rounded to 1 MHz.
// A window gives the point (clock, t_forward, P · t_forward) and (clock, t_backward,
// P · t_backward). Points of one stage at one cap (ranks of several pipelines, windows before
// and after the probes) are averaged, weighted by their ops; points of a stage whose clocks
// round to one MHz are merged likewise. A window shorter than min_window_s after settling, or
// with no whole forward or backward, or with P ≤ 0, is skipped with a note.
// resample_mhz > 0: each stage's points are put on a grid from its highest measured clock down
// in resample_mhz steps to its lowest, time interpolated linearly in 1/clock (exact for a time
// t1 · (c/x + 1 − c), gpu_model.hpp) and power linearly in the clock between the two measured
// points around; the measured clocks themselves are kept.
//
// Contract: acquire_profile() returns InvalidArgument when a stage has no rank, a rank's GPU
// has no trace rows in the ranks' time span, or a stage ends with no point; the trace's times
// are time_s + trace_offset_s in the hook's clock (unix seconds).

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "pipeline/gpu_samples.hpp"
#include "pipeline/stage_profile.hpp"
#include "pipeline/timing_log.hpp"

namespace fw::pipeline {

// The defaults of `pipeline profile` (docs/pipeline-profile.md: with them a profile acquired on
// the simulated pipeline scenarios plans within 0.1 point of their offline profiles; with 8
// levels, 1.3 points off on caps-pp4-a100x8).
inline constexpr int kDefaultProbeLevels = 12;
inline constexpr double kDefaultProbeMeasureS = 15;
inline constexpr double kDefaultResampleMhz = 15;

struct AcquisitionOptions {
  double blocking_w = 0;      // a waiting GPU's power; REQUIRES > 0
  double settle_s = 2.2;      // dropped after each cap change (kCapSettlingS)
  double min_window_s = 2.0;  // shortest measured span
  double cap_tol_w = 0.5;
  double trace_offset_s = 0;                  // unix time of the trace's time_s = 0
  double resample_mhz = kDefaultResampleMhz;  // 0: the measured clocks only
};

// One measured point of a stage (before resampling), for the report.
struct MeasuredPoint {
  int stage = 0;
  double cap_w = 0;  // NaN: the trace had no cap
  double freq_mhz = 0, forward_s = 0, backward_s = 0, compute_w = 0;
  int ops = 0, windows = 0;
  double measured_s = 0;
};

struct AcquiredProfile {
  StageProfile profile;
  std::vector<MeasuredPoint> measured;  // by stage, highest clock first
  std::vector<std::string> notes;       // windows skipped and why
};

Result<AcquiredProfile> acquire_profile(const std::vector<RankTimings>& ranks,
                                        const std::vector<GpuSample>& samples,
                                        const AcquisitionOptions& opt);

// Writes a profile in the Perseus artifact's CSV format (read_stage_profile reads it back).
Status write_stage_profile(const std::string& path, const StageProfile& p);

// The probe plan: every GPU of the job at each cap in turn, settle_s + measure_s each, after
// a baseline window at the highest cap and ending back at it (restore). Cost: total minutes,
// and an estimate of the job's throughput while probing, assuming a GPU's compute clock falls
// in proportion to its compute power above blocking_w (from busy_w at the uncapped clock):
// speed ≥ (cap − blocking_w) / (busy_w − blocking_w), at least 0.05 (power is convex in the
// clock, so the clock is usually higher: an upper estimate of the loss).
struct ProbeStep {
  double start_s = 0;  // from the probe's start
  double cap_w = 0;
  double dwell_s = 0;
  double speed_est = 1;  // throughput relative to uncapped, estimated
};
struct ProbePlan {
  std::vector<ProbeStep> steps;  // the baseline window, then the probes (the restore is not a step)
  double total_s = 0;
  double mean_speed_est = 1;  // throughput while probing, relative to uncapped
  double lost_s = 0;          // job time lost to the probes: Σ dwell · (1 − speed)
  double busy_w = 0, blocking_w = 0;
};
struct ProbeOptions {
  std::vector<double> caps_w;  // the probe levels (any order: probed highest first)
  double max_cap_w = 0;        // the GPU's maximum: the baseline and the restore
  double settle_s = 2.2, measure_s = kDefaultProbeMeasureS;
  double busy_w = 0;  // compute power uncapped (0: unknown, max_cap_w assumed)
  double blocking_w = 0;
};
Result<ProbePlan> make_probe_plan(const ProbeOptions& opt);
// `n` levels from max_cap_w down to min_cap_w, evenly spaced (the highest excluded: it is
// the baseline), rounded to 1 W.
std::vector<double> default_probe_caps(double min_cap_w, double max_cap_w, int n);
std::string format_probe_plan(const ProbePlan& p);
nlohmann::json probe_plan_json(const ProbePlan& p);

// The measured points (a table / JSON), the notes, and how many clocks each stage has.
std::string format_acquisition(const AcquiredProfile& a);
nlohmann::json acquisition_json(const AcquiredProfile& a);
// The fewest measured clocks of any stage (the planner needs more than one to save anything).
int fewest_clocks(const AcquiredProfile& a);
// The largest measured compute power at a stage's highest clock (the probe plan's busy_w).
double top_compute_w(const AcquiredProfile& a);

}  // namespace fw::pipeline

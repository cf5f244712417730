#pragma once
// Incremental fit of a GRPO job's completion lengths from the run's own telemetry: the part of
// `fit` (sim/fit.hpp) that a planner refits every few minutes while the run goes on.
//
// What it reads: only what a node's telemetry carries (vocab/snapshot.hpp) — per job the
// cumulative decode tokens (tokens_total), completed steps (steps_total) and the group size
// in force — plus the job's declared configuration (prompts per step, the completion-length
// sigma and clip, as the operator wrote them). Never the plant, its seed or its future.
//
// Model: a step of group size g generates prompts_per_step · g sequences whose completion
// lengths are clip(lognormal(median, sigma), 1, max) (the workload's own model,
// docs/simulator.md); the decode tokens of a step are their sum. fit() pools the completed
// steps whose end lies in the trailing window, takes mean completion tokens per sequence, and
// inverts the clipped lognormal's mean for the median (sigma and clip as declared).
//
// Contract: observe() takes snapshots in non-decreasing time (every sample or every
// decision; a step is seen when steps_total grows between two observed snapshots, so
// observations must be closer than a step). The first step of each job (already under way at
// the first snapshot) is skipped. Not thread-safe. Memory: one record per completed step.

#include <cstddef>
#include <vector>

#include "vocab/snapshot.hpp"

namespace fw::sim {

// Mean of min(max(X, 1), max_tokens) for X lognormal with the given median and log-space
// sigma (the rounding to whole tokens is ignored). REQUIRES: median > 0, sigma >= 0.
double clipped_lognormal_mean(double median, double sigma, double max_tokens);
// The median whose clipped lognormal mean is `mean` (bisection in log space); clamped to
// [1e-3, max_tokens] when the mean is out of reach.
double median_for_clipped_mean(double mean, double sigma, double max_tokens);

// A job's declared configuration, as the fit needs it (a GRPO job; prompts_per_step > 0).
struct DeclaredGrpoJob {
  bool grpo = false;  // false: the job is not fitted
  int prompts_per_step = 1;
  double completion_sigma = 0.8;
  double completion_max_tokens = 1024;
  double completion_median_tokens = 160;  // declared (the fit's value before any data)
};

struct OnlineFitConfig {
  double window_s = 900;  // trailing window of completed steps a fit pools
  int min_steps = 3;      // fewer completed steps in the window: no fit for the job
  // Trend extrapolation (0: none, the default): per-step mean completion tokens regressed on
  // the steps' end times over trend_window_s (least squares weighted by sequences) and the line
  // projected to now_s + trend_ahead_s (a planner passes half its horizon: the middle of the
  // plan), bounded to [mean / trend_max_factor, mean · trend_max_factor] of the window's mean;
  // the median is then fitted to the projected mean. Needs >= max(3, min_steps) steps.
  double trend_ahead_s = 0;
  double trend_max_factor = 1.5;
  // The regression's window (its slope from the steps ending in (now_s − trend_window_s,
  // now_s]; the line through the fit window's weighted mean); 0: window_s.
  double trend_window_s = 0;
};

struct JobLengthFit {
  bool fitted = false;       // enough steps in the window
  int steps = 0;             // completed steps pooled
  double seqs = 0;           // sequences in them
  double mean_tokens = 0;    // decode tokens per sequence, the window's (no trend)
  double median_tokens = 0;  // fitted median (the declared one when !fitted)
  // With OnlineFitConfig::trend_ahead_s > 0: the regression's slope (tokens per sequence per
  // s) and the bounded projected mean the median was fitted to (mean_tokens otherwise).
  double slope_tokens_per_s = 0;
  double projected_mean_tokens = 0;
};

class OnlineGrpoFit {
 public:
  OnlineGrpoFit(std::vector<DeclaredGrpoJob> jobs, OnlineFitConfig cfg);

  void observe(const Snapshot& s);
  // The fit from completed steps ending in (now_s − window_s, now_s], per job (plant order).
  std::vector<JobLengthFit> fit(double now_s) const;
  // Completed steps recorded so far (all jobs).
  size_t steps_recorded() const;

 private:
  struct StepRecord {
    double end_s = 0;
    double tokens = 0;  // decode tokens of the step
    double seqs = 0;    // prompts_per_step · group size in force
  };
  struct JobTrack {
    bool seen = false;   // a snapshot of the job was observed
    bool armed = false;  // a step boundary was observed: the next completion is a whole step
    double steps = 0;    // steps_total at the last observation
    double tokens_at_start = 0;  // tokens_total when the current step began
    double group = 0;            // group size in force for the current step
    std::vector<StepRecord> done;
  };
  std::vector<DeclaredGrpoJob> jobs_;
  OnlineFitConfig cfg_;
  std::vector<JobTrack> track_;
};

}  // namespace fw::sim

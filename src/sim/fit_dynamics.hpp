#pragma once
// In-training dynamics of a power log for `flexwatt fit` (docs/simulator.md, rules D1–D4): the
// autocorrelation of the node's power inside training, its dominant period (the step time, when
// the log shows one), and the split of the in-training variance into a part common to the job's
// GPUs and a part independent per GPU. Also the observation model of the simulator's AR(1)
// power noise (as read: instantaneous, or a trailing 1 s mean on Hopper), used to turn a
// measured sd and lag-one correlation into `hetero.noise_sd` and `hetero.noise_tau_s`.

#include <cstddef>
#include <vector>

#include "sim/fit.hpp"

namespace fw::sim {

struct TrainingDynamics {
  std::vector<double> acf;   // node per-GPU-mean deviation, lags 0.. samples
  double period_s = 0;       // dominant in-training period (0: none)
  double acf_at_period = 0;  // its autocorrelation
  double node_var_w2 = 0;    // variance of the node's per-GPU mean in training, W²
  double common_var_w2 = 0;  // part common to the GPUs (per GPU), W²
  double indep_var_w2 = 0;   // part independent per GPU, W²
  size_t samples = 0;        // steady samples used
};

// Over the samples where `steady` is set (each contiguous run minus its own mean, pairs within
// one run only), lags up to max_lag_s.
TrainingDynamics training_dynamics(const PowerLog& log, const std::vector<char>& steady,
                                   double max_lag_s = 20);

// D2: the dominant period of an autocorrelation sampled every dt_s: the highest local maximum
// at a lag of ≥ 2 samples with a value ≥ 0.3 that rises ≥ 0.15 above the lowest value before
// it; parabolic interpolation between samples. 0 when there is none; *peak gets its value.
double dominant_period_s(const std::vector<double>& acf, double dt_s, double* peak);

// The simulator's noise: AR(1) with step correlation rho, read through a trailing boxcar of
// `taps` steps (1: instantaneous). Variance of the reading per unit noise variance, and the
// reading's autocorrelation at `lag` steps.
double box_ar1_var_factor(double rho, int taps);
double box_ar1_acf(double rho, int taps, int lag);

}  // namespace fw::sim

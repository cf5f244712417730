#pragma once
// Power stability metrics of a node or site power series (issue #48; `flexwatt analyze
// --stability`; definitions and examples in docs/stability.md). Units: W, s, Hz; "% of peak"
// is relative to the series' largest sample.
//
// All metrics are computed on the uniform grid of the series (power_series.hpp: median step,
// linear interpolation). With period dt:
// - Ramp over window W: n = round(W / dt) samples (effective window n·dt); at every grid
//   sample i >= 2n − 1 the trailing mean of the last n samples, a = mean(x[i−n+1..i]), is
//   compared with the mean of the n samples before it, b = mean(x[i−2n+1..i−n]):
//   ramp_i = (a − b) / (n·dt) in W/s. max_up = max(0, max ramp_i), max_down = max(0,
//   max −ramp_i) (both magnitudes); at_s = the time of x[i−n+1], the first sample of the later
//   window (a step up at t is seen at t); NaN when that magnitude is 0. A linear ramp of slope s
//   gives s for every W; a sine A·sin(2πft) gives 2A·sin²(πfW)/(πf·W²), which tends to 2πfA as W →
//   0. Not computed (skipped, with the reason) when W < dt or the series has fewer than 2n samples.
// - Swing over window W: m = round(W / dt); over every run of m + 1 consecutive samples (a
//   closed window of m·dt seconds, sliding by one sample) max − min; reported: the largest and
//   the 95th percentile (nearest rank) over all positions, and where the largest starts.
//   Skipped when W < dt or the series has fewer than m + 1 samples.
// - Band energy: spectrum.hpp (Hann window, linear detrend, Welch segments when long).
// Pure and deterministic; thread-safe.

#include <string>
#include <vector>

#include "analysis/power_series.hpp"
#include "analysis/spectrum.hpp"
#include "core/status.hpp"

namespace fw {

struct StabilityOptions {
  std::vector<double> ramp_windows_s = {0.1, 1, 10, 60};  // each > 0
  std::vector<double> swing_windows_s = {1, 10, 60};      // each > 0
  double band_lo_hz = 0.1, band_hi_hz = 5;                // 0 <= lo < hi
  size_t max_fft_points = kDefaultMaxFftPoints;
};

struct RampStats {
  double window_s = 0;                                        // as asked
  double effective_window_s = kUnset;                         // n·dt; NaN when skipped
  int64_t samples = 0;                                        // n
  double max_up_w_per_s = kUnset, max_down_w_per_s = kUnset;  // magnitudes, >= 0
  double max_up_at_s = kUnset, max_down_at_s = kUnset;
  double max_up_frac_per_s = kUnset, max_down_frac_per_s = kUnset;  // / peak
  std::string skipped;  // empty when computed, else why not
  // The larger of the two magnitudes (NaN when skipped).
  double max_abs_w_per_s() const;
};

struct SwingStats {
  double window_s = 0;
  double effective_window_s = kUnset;  // m·dt
  int64_t samples = 0;                 // m + 1
  int64_t positions = 0;               // windows judged
  double max_w = kUnset, p95_w = kUnset, max_at_s = kUnset;
  double max_frac = kUnset, p95_frac = kUnset;  // / peak
  std::string skipped;
};

struct StabilityReport {
  std::string path, format, series;
  int gpus = 0;
  int64_t samples = 0;  // of the input
  double duration_s = 0, energy_j = 0, mean_w = 0, peak_w = 0;
  // The uniform grid (power_series.hpp): its period, points, and how the input fitted it.
  double period_s = 0, max_step_s = 0, gap_s = 0;
  int64_t grid_samples = 0, gaps = 0;
  bool uniform_input = false;
  int64_t duplicates = 0, incomplete_ticks = 0, unsorted_rows = 0;
  std::vector<RampStats> ramps;
  std::vector<SwingStats> swings;
  BandEnergy band;
  std::vector<std::string> notes;  // what limits the figures (Nyquist, gaps, skipped windows)
};

// Validates options: windows > 0 and finite (at most 16 each), 0 <= lo < hi finite.
// InvalidArgument naming the CLI flag (--ramp-windows, --swing-windows, --band).
Status validate(const StabilityOptions& o);

// Ramp and swing of a uniform series (dt = period_s, first sample at t0_s); `peak_w` scales the
// fractions. Exposed for tests.
RampStats ramp_stats(const UniformSeries& u, double window_s, double peak_w);
SwingStats swing_stats(const UniformSeries& u, double window_s, double peak_w);

// Every metric of s. Errors: as resample_uniform, band_energy (fewer than 4 grid samples).
Result<StabilityReport> analyze_stability(const PowerSeries& s, const StabilityOptions& o);

// A trace against the same job run unmitigated.
struct ReferenceComparison {
  std::string path;
  double energy_j = 0, ref_energy_j = 0;
  double duration_s = 0, ref_duration_s = 0;
  double energy_overhead_pct = 0;  // (E / E_ref − 1) × 100
  // Tokens from each trace's jobs.csv (Σ over jobs of last − first tokens_total); throughput
  // = tokens / duration_s. NaN when either trace has none (throughput_note says why).
  double tokens = kUnset, ref_tokens = kUnset;
  double throughput_loss_pct = kUnset;            // (1 − thr / thr_ref) × 100
  double energy_per_token_overhead_pct = kUnset;  // ((E/tok) / (E_ref/tok_ref) − 1) × 100
  std::string throughput_note;                    // empty when known
};

// Energies are the trapezoid integrals of the two series. Errors: InvalidArgument when the
// reference's energy is 0, or a jobs.csv cannot be read (file:line).
Result<ReferenceComparison> compare_with_reference(const PowerSeries& trace,
                                                   const PowerSeries& reference);

}  // namespace fw

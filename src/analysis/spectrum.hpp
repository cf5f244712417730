#pragma once
// The share of a power series' variation that lies in a frequency band, from a periodogram
// (docs/stability.md, "Band energy").
//
// Contract (pure, deterministic, thread-safe):
// - Input: samples on a uniform grid of period_s seconds (> 0), at least 4 of them.
// - The series is cut into segments: one segment (the whole series) when it has at most
//   max_fft_points samples, else segments of max_fft_points samples overlapping by half, the
//   last one ending at the series' end (Welch's method). Each segment is linearly detrended
//   (least-squares line removed: this also removes the mean), multiplied by a periodic Hann
//   window, zero-padded to the next power of two and transformed (radix-2 FFT). The
//   periodograms |X_j|^2 of the segments are summed.
// - fraction = Σ over bins j >= 1 with lo <= f_j <= hi_effective of P_j / Σ over bins j >= 1
//   of P_j, where f_j = j / (padded length × period_s) runs up to the Nyquist frequency
//   1 / (2 period_s); one-sided (bins below Nyquist count twice, the Nyquist bin once; the
//   weights cancel in the ratio except at Nyquist). Bin 0 (DC) is left out of both sums.
// - hi_effective = min(hi, Nyquist): a band reaching above Nyquist (by more than 1e-9
//   relative) is clipped (clipped true); a band starting at or above Nyquist cannot be seen at
//   all (visible false, fraction NaN).
// - A series with no variation left after detrending has fraction 0: a segment whose residual
//   RMS is at most 1e-12 of its largest |sample| (rounding of a constant or a line) adds
//   nothing.
// - resolution_hz = 1 / (segment length × period_s): details narrower than this (and a band
//   edge below it) are not resolved.

#include <cstddef>
#include <vector>

#include "core/status.hpp"

namespace fw {

// Largest FFT segment by default: 2^21 samples (58 h at 10 Hz; 32 MiB of complex doubles).
inline constexpr size_t kDefaultMaxFftPoints = size_t{1} << 21;

struct BandEnergy {
  double lo_hz = 0, hi_hz = 0;  // as asked
  double hi_effective_hz = 0;   // min(hi, Nyquist)
  double nyquist_hz = 0;
  double resolution_hz = 0;
  bool clipped = false;  // hi > Nyquist
  bool visible = true;   // lo < Nyquist
  int segments = 0;
  double fraction = 0;  // in [0, 1]; NaN when !visible
};

// Errors: InvalidArgument when period_s <= 0, fewer than 4 samples, a sample not finite,
// lo < 0, hi <= lo, or max_fft_points < 4.
Result<BandEnergy> band_energy(const std::vector<double>& samples, double period_s, double lo_hz,
                               double hi_hz, size_t max_fft_points = kDefaultMaxFftPoints);

// In-place radix-2 FFT of (re, im), forward (e^{-2πi jk/n}); n = re.size() = im.size() must be
// a power of two (REQUIRES).
void fft_radix2(std::vector<double>& re, std::vector<double>& im);

}  // namespace fw

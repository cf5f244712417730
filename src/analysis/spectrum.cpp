#include "analysis/spectrum.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/format.hpp"

namespace fw {

void fft_radix2(std::vector<double>& re, std::vector<double>& im) {
  const size_t n = re.size();
  for (size_t i = 1, j = 0; i < n; ++i) {  // bit-reversal permutation
    size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      std::swap(re[i], re[j]);
      std::swap(im[i], im[j]);
    }
  }
  for (size_t len = 2; len <= n; len <<= 1) {
    const double ang = -2 * std::numbers::pi / static_cast<double>(len);
    const size_t half = len / 2;
    for (size_t k = 0; k < half; ++k) {  // twiddles computed directly: no drift over long loops
      const double wr = std::cos(ang * static_cast<double>(k));
      const double wi = std::sin(ang * static_cast<double>(k));
      for (size_t i = k; i < n; i += len) {
        const size_t j = i + half;
        const double tr = re[j] * wr - im[j] * wi;
        const double ti = re[j] * wi + im[j] * wr;
        re[j] = re[i] - tr;
        im[j] = im[i] - ti;
        re[i] += tr;
        im[i] += ti;
      }
    }
  }
}

namespace {

size_t next_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Adds the periodogram of x[begin, begin + len) (detrended, Hann-windowed, padded to `padded`)
// to power[0 .. padded / 2].
void add_segment(const std::vector<double>& x, size_t begin, size_t len, size_t padded,
                 std::vector<double>& power) {
  // Least-squares line over k = 0..len-1, centred at kc for conditioning.
  const double kc = 0.5 * static_cast<double>(len - 1);
  double sx = 0, skk = 0, skx = 0;
  for (size_t k = 0; k < len; ++k) sx += x[begin + k];
  const double mean = sx / static_cast<double>(len);
  for (size_t k = 0; k < len; ++k) {
    const double d = static_cast<double>(k) - kc;
    skk += d * d;
    skx += d * (x[begin + k] - mean);
  }
  const double slope = skk > 0 ? skx / skk : 0;
  // A residual at rounding level (a constant or an exact line) is no variation at all.
  double res2 = 0, mag = 0;
  for (size_t k = 0; k < len; ++k) {
    const double r = x[begin + k] - mean - slope * (static_cast<double>(k) - kc);
    res2 += r * r;
    mag = std::max(mag, std::fabs(x[begin + k]));
  }
  if (std::sqrt(res2 / static_cast<double>(len)) <= 1e-12 * mag) return;
  std::vector<double> re(padded, 0.0), im(padded, 0.0);
  const double step = 2 * std::numbers::pi / static_cast<double>(len);
  for (size_t k = 0; k < len; ++k) {
    const double d = static_cast<double>(k) - kc;
    const double hann = 0.5 * (1 - std::cos(step * static_cast<double>(k)));
    re[k] = (x[begin + k] - mean - slope * d) * hann;
  }
  fft_radix2(re, im);
  for (size_t j = 0; j <= padded / 2; ++j) power[j] += re[j] * re[j] + im[j] * im[j];
}

}  // namespace

Result<BandEnergy> band_energy(const std::vector<double>& x, double period_s, double lo_hz,
                               double hi_hz, size_t max_fft_points) {
  if (!(period_s > 0) || !std::isfinite(period_s)) {
    return Status::InvalidArgument("band energy: sample period must be > 0");
  }
  if (x.size() < 4) return Status::InvalidArgument("band energy: fewer than 4 samples");
  if (!(lo_hz >= 0) || !(hi_hz > lo_hz) || !std::isfinite(hi_hz)) {
    return Status::InvalidArgument("band energy: the band must have 0 <= lo < hi (got " +
                                   format_g(lo_hz) + ", " + format_g(hi_hz) + ")");
  }
  if (max_fft_points < 4) return Status::InvalidArgument("band energy: max_fft_points < 4");
  for (double v : x) {
    if (!std::isfinite(v)) return Status::InvalidArgument("band energy: a sample is not finite");
  }
  BandEnergy b;
  b.lo_hz = lo_hz;
  b.hi_hz = hi_hz;
  b.nyquist_hz = 0.5 / period_s;
  // Relative tolerance: a grid period read from decimal times is off by a few ulps, and a
  // 5 Hz band on a 0.1 s grid is not "clipped" by 1e-14 Hz.
  b.clipped = hi_hz > b.nyquist_hz * (1 + 1e-9);
  b.hi_effective_hz = b.clipped ? b.nyquist_hz : hi_hz;
  b.visible = lo_hz < b.nyquist_hz * (1 - 1e-9);
  const size_t seg = std::min(x.size(), max_fft_points);
  b.resolution_hz = 1 / (static_cast<double>(seg) * period_s);
  const size_t padded = next_pow2(seg);
  std::vector<double> power(padded / 2 + 1, 0.0);
  if (seg == x.size()) {
    add_segment(x, 0, seg, padded, power);
    b.segments = 1;
  } else {
    const size_t hop = seg / 2;
    size_t begin = 0;
    for (;; begin += hop) {
      if (begin + seg >= x.size()) begin = x.size() - seg;  // the last ends at the series' end
      add_segment(x, begin, seg, padded, power);
      ++b.segments;
      if (begin + seg == x.size()) break;
    }
  }
  if (!b.visible) {
    b.fraction = std::nan("");
    return b;
  }
  const double df = 1 / (static_cast<double>(padded) * period_s);
  const size_t nyq = padded / 2;
  double total = 0, in_band = 0;
  for (size_t j = 1; j <= nyq; ++j) {
    const double p = power[j] * (j == nyq ? 1.0 : 2.0);
    const double f = static_cast<double>(j) * df;
    total += p;
    if (f >= lo_hz && f <= b.hi_effective_hz) in_band += p;
  }
  b.fraction = total > 0 ? std::clamp(in_band / total, 0.0, 1.0) : 0.0;
  return b;
}

}  // namespace fw

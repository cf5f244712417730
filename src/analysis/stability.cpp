#include "analysis/stability.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>

#include "core/format.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {

double RampStats::max_abs_w_per_s() const {
  return std::isnan(max_up_w_per_s) ? kUnset : std::max(max_up_w_per_s, max_down_w_per_s);
}

namespace {

constexpr size_t kMaxStabilityWindows = 16;

// Samples of a window of w seconds on a grid of dt: round(w / dt), or 0 when w < dt (with a
// relative tolerance for windows given in decimal, 0.1 on a 0.1 s grid).
int64_t window_samples(double w, double dt) {
  if (w < dt * (1 - 1e-9)) return 0;
  return std::max<int64_t>(1, std::llround(w / dt));
}

Status validate_windows(const std::vector<double>& ws, const char* flag) {
  if (ws.empty()) return Status::InvalidArgument(std::string(flag) + ": no window given");
  if (ws.size() > kMaxStabilityWindows) {
    return Status::InvalidArgument(std::string(flag) + ": at most " +
                                   std::to_string(kMaxStabilityWindows) + " windows");
  }
  for (double w : ws) {
    if (!(w > 0) || !std::isfinite(w)) {
      return Status::InvalidArgument(std::string(flag) + ": each window must be > 0 and finite");
    }
  }
  return Status::Ok();
}

}  // namespace

Status validate(const StabilityOptions& o) {
  FW_RETURN_IF_ERROR(validate_windows(o.ramp_windows_s, "--ramp-windows"));
  FW_RETURN_IF_ERROR(validate_windows(o.swing_windows_s, "--swing-windows"));
  if (!(o.band_lo_hz >= 0) || !std::isfinite(o.band_hi_hz) || !(o.band_hi_hz > o.band_lo_hz)) {
    return Status::InvalidArgument("--band: expected LO,HI in Hz with 0 <= LO < HI (got " +
                                   format_g(o.band_lo_hz) + "," + format_g(o.band_hi_hz) + ")");
  }
  return Status::Ok();
}

RampStats ramp_stats(const UniformSeries& u, double window_s, double peak_w) {
  RampStats r;
  r.window_s = window_s;
  const double dt = u.period_s;
  const int64_t n = window_samples(window_s, dt);
  const int64_t size = static_cast<int64_t>(u.power_w.size());
  if (n == 0) {
    r.skipped = "shorter than the sample period (" + format_g(dt) + " s)";
    return r;
  }
  r.samples = n;
  r.effective_window_s = static_cast<double>(n) * dt;
  if (2 * n > size) {
    r.skipped = "the trace holds fewer than two windows (" + format_g(2 * r.effective_window_s) +
                " s of samples needed)";
    return r;
  }
  // Prefix sums in long double: site power (1e8 W) over 1e7 samples stays exact to < 1 mW.
  std::vector<long double> prefix(size + 1, 0.0L);
  for (int64_t i = 0; i < size; ++i) prefix[i + 1] = prefix[i] + u.power_w[i];
  double up = -INFINITY, down = INFINITY;
  int64_t up_at = 0, down_at = 0;
  const long double scale = 1.0L / (static_cast<long double>(n) * n * dt);
  for (int64_t i = 2 * n - 1; i < size; ++i) {
    // (a − b) / (n·dt) with a, b the means: (Σ later − Σ earlier) / (n · n·dt).
    const long double later = prefix[i + 1] - prefix[i + 1 - n];
    const long double earlier = prefix[i + 1 - n] - prefix[i + 1 - 2 * n];
    const double ramp = static_cast<double>((later - earlier) * scale);
    if (ramp > up) {
      up = ramp;
      up_at = i - n + 1;
    }
    if (ramp < down) {
      down = ramp;
      down_at = i - n + 1;
    }
  }
  r.max_up_w_per_s = std::max(0.0, up);
  r.max_down_w_per_s = std::max(0.0, -down);
  r.max_up_at_s = r.max_up_w_per_s > 0 ? u.time_at(up_at) : kUnset;
  r.max_down_at_s = r.max_down_w_per_s > 0 ? u.time_at(down_at) : kUnset;
  r.max_up_frac_per_s = peak_w > 0 ? r.max_up_w_per_s / peak_w : kUnset;
  r.max_down_frac_per_s = peak_w > 0 ? r.max_down_w_per_s / peak_w : kUnset;
  return r;
}

SwingStats swing_stats(const UniformSeries& u, double window_s, double peak_w) {
  SwingStats s;
  s.window_s = window_s;
  const double dt = u.period_s;
  const int64_t m = window_samples(window_s, dt);
  const int64_t size = static_cast<int64_t>(u.power_w.size());
  if (m == 0) {
    s.skipped = "shorter than the sample period (" + format_g(dt) + " s)";
    return s;
  }
  s.samples = m + 1;
  s.effective_window_s = static_cast<double>(m) * dt;
  if (m + 1 > size) {
    s.skipped = "longer than the trace (" + format_g(dt * static_cast<double>(size - 1)) + " s)";
    return s;
  }
  // Sliding max and min over x[i−m..i] (monotonic deques of indices).
  std::deque<int64_t> hi, lo;
  std::vector<double> swings;
  swings.reserve(static_cast<size_t>(size - m));
  const std::vector<double>& x = u.power_w;
  double best = -1;
  int64_t best_start = 0;
  for (int64_t i = 0; i < size; ++i) {
    while (!hi.empty() && x[hi.back()] <= x[i]) hi.pop_back();
    hi.push_back(i);
    while (!lo.empty() && x[lo.back()] >= x[i]) lo.pop_back();
    lo.push_back(i);
    if (hi.front() < i - m) hi.pop_front();
    if (lo.front() < i - m) lo.pop_front();
    if (i < m) continue;
    const double sw = x[hi.front()] - x[lo.front()];
    swings.push_back(sw);
    if (sw > best) {
      best = sw;
      best_start = i - m;
    }
  }
  s.positions = static_cast<int64_t>(swings.size());
  s.max_w = best;
  s.max_at_s = u.time_at(best_start);
  // 95th percentile, nearest rank: the ceil(0.95·K)-th smallest.
  const size_t rank = static_cast<size_t>(std::ceil(0.95 * static_cast<double>(swings.size())));
  const size_t k = std::max<size_t>(rank, 1) - 1;
  std::nth_element(swings.begin(), swings.begin() + k, swings.end());
  s.p95_w = swings[k];
  s.max_frac = peak_w > 0 ? s.max_w / peak_w : kUnset;
  s.p95_frac = peak_w > 0 ? s.p95_w / peak_w : kUnset;
  return s;
}

// Long by design: the report's fields and every note in one place.
Result<StabilityReport> analyze_stability(const PowerSeries& s, const StabilityOptions& o) {
  FW_RETURN_IF_ERROR(validate(o));
  FW_ASSIGN_OR_RETURN(UniformSeries u, resample_uniform(s));
  StabilityReport r;
  r.path = s.path;
  r.format = s.format;
  r.series = s.series;
  r.gpus = s.gpus;
  r.samples = static_cast<int64_t>(s.time_s.size());
  r.duration_s = s.duration_s();
  r.energy_j = s.energy_j();
  r.mean_w = r.duration_s > 0 ? r.energy_j / r.duration_s : s.power_w.front();
  r.peak_w = s.peak_w();
  r.period_s = u.period_s;
  r.max_step_s = u.max_step_s;
  r.gaps = u.gaps;
  r.gap_s = u.gap_s;
  r.grid_samples = static_cast<int64_t>(u.power_w.size());
  r.uniform_input = u.uniform_input;
  r.duplicates = s.duplicates;
  r.incomplete_ticks = s.incomplete_ticks;
  r.unsorted_rows = s.unsorted_rows;
  if (u.power_w.size() < 4) {
    return Status::InvalidArgument(s.path + ": fewer than 4 samples on the uniform grid (" +
                                   std::to_string(u.power_w.size()) + ")");
  }
  if (!u.uniform_input) {
    r.notes.push_back("unevenly sampled (steps up to " + format_g(u.max_step_s) +
                      " s): resampled to a uniform grid of the median step, " +
                      format_g(u.period_s) + " s, by linear interpolation");
  }
  if (u.gaps > 0) {
    r.notes.push_back(std::to_string(u.gaps) + " gap(s) longer than 1.5 sample periods (" +
                      format_g(u.gap_s) +
                      " s missing) are bridged by a straight line: ramps and swings across "
                      "them are those of the line");
  }
  // A window not computed, or computed on a different whole number of samples, is said.
  auto note_window = [&](const char* kind, double w, const std::string& skipped,
                         double effective_s) {
    if (!skipped.empty()) {
      r.notes.push_back(std::string(kind) + " window " + format_g(w) +
                        " s not computed: " + skipped);
    } else if (std::fabs(effective_s - w) > 0.01 * w) {
      r.notes.push_back(std::string(kind) + " window " + format_g(w) + " s is " +
                        format_g(effective_s) + " s on this grid (whole samples)");
    }
  };
  for (double w : o.ramp_windows_s) {
    r.ramps.push_back(ramp_stats(u, w, r.peak_w));
    note_window("ramp", w, r.ramps.back().skipped, r.ramps.back().effective_window_s);
  }
  for (double w : o.swing_windows_s) {
    r.swings.push_back(swing_stats(u, w, r.peak_w));
    note_window("swing", w, r.swings.back().skipped, r.swings.back().effective_window_s);
  }
  FW_ASSIGN_OR_RETURN(
      r.band, band_energy(u.power_w, u.period_s, o.band_lo_hz, o.band_hi_hz, o.max_fft_points));
  const BandEnergy& b = r.band;
  if (!b.visible) {
    r.notes.push_back("the band " + format_g(b.lo_hz) + "-" + format_g(b.hi_hz) +
                      " Hz lies above the trace's Nyquist frequency (" + format_g(b.nyquist_hz) +
                      " Hz at a " + format_g(u.period_s) +
                      " s sample period): it cannot be seen; faster swings alias into lower "
                      "frequencies");
  } else if (b.clipped) {
    r.notes.push_back("the trace's Nyquist frequency is " + format_g(b.nyquist_hz) + " Hz (" +
                      format_g(u.period_s) + " s sample period): the band is clipped to " +
                      format_g(b.lo_hz) + "-" + format_g(b.hi_effective_hz) +
                      " Hz; swings faster than that are not seen (or alias into lower "
                      "frequencies)");
  }
  if (b.visible && b.lo_hz > 0 && b.lo_hz < b.resolution_hz) {
    r.notes.push_back("the band's low edge (" + format_g(b.lo_hz) +
                      " Hz) is below the spectral resolution (" + format_g(b.resolution_hz) +
                      " Hz = 1 / segment length): the trace is too short to resolve it");
  }
  return r;
}

Result<ReferenceComparison> compare_with_reference(const PowerSeries& t, const PowerSeries& ref) {
  ReferenceComparison c;
  c.path = ref.path;
  c.energy_j = t.energy_j();
  c.ref_energy_j = ref.energy_j();
  c.duration_s = t.duration_s();
  c.ref_duration_s = ref.duration_s();
  if (!(c.ref_energy_j > 0)) {
    return Status::InvalidArgument(ref.path + ": the reference trace's energy is 0");
  }
  c.energy_overhead_pct = (c.energy_j / c.ref_energy_j - 1) * 100;
  std::optional<double> tok, ref_tok;
  if (!t.jobs_path.empty()) {
    FW_ASSIGN_OR_RETURN(tok, read_job_tokens(t.jobs_path));
  }
  if (!ref.jobs_path.empty()) {
    FW_ASSIGN_OR_RETURN(ref_tok, read_job_tokens(ref.jobs_path));
  }
  if (tok) c.tokens = *tok;
  if (ref_tok) c.ref_tokens = *ref_tok;
  if (!tok || !ref_tok) {
    const std::string& which = !tok ? t.path : ref.path;
    c.throughput_note =
        "unknown: " + which + " carries no tokens (tokens_total in a trace directory's jobs.csv)";
  } else if (!(*ref_tok > 0) || !(c.ref_duration_s > 0) || !(c.duration_s > 0)) {
    c.throughput_note = "unknown: the reference made no tokens or a trace has no duration";
  } else {
    const double thr = *tok / c.duration_s, ref_thr = *ref_tok / c.ref_duration_s;
    c.throughput_loss_pct = (1 - thr / ref_thr) * 100;
    if (*tok > 0) {
      c.energy_per_token_overhead_pct =
          ((c.energy_j / *tok) / (c.ref_energy_j / *ref_tok) - 1) * 100;
    }
  }
  return c;
}

}  // namespace fw

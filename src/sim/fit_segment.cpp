// Phase segmentation of an uncapped power log (sim/fit_segment.hpp).

#include "sim/fit_segment.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/format.hpp"

namespace fw::sim {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

// Centered running median over w samples (w odd).
std::vector<double> running_median(const std::vector<double>& x, size_t w) {
  std::vector<double> out(x.size());
  const size_t h = w / 2;
  std::vector<double> buf;
  for (size_t k = 0; k < x.size(); ++k) {
    const size_t a = k >= h ? k - h : 0, b = std::min(x.size(), k + h + 1);
    buf.assign(x.begin() + static_cast<std::ptrdiff_t>(a),
               x.begin() + static_cast<std::ptrdiff_t>(b));
    out[k] = median(buf);
  }
  return out;
}

// 1-D 2-means from p10 / p90.
double two_means_threshold(const std::vector<double>& v) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  double lo = s[s.size() / 10], hi = s[s.size() * 9 / 10];
  for (int it = 0; it < 30; ++it) {
    const double thr = 0.5 * (lo + hi);
    double sl = 0, sh = 0, nl = 0, nh = 0;
    for (double x : v) (x < thr ? (sl += x, nl += 1) : (sh += x, nh += 1));
    if (nl > 0) lo = sl / nl;
    if (nh > 0) hi = sh / nh;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

// Reason for length: one pass of rules S1–S7 over the same series and runs.
Segmentation segment_log(const std::vector<double>& x, double dt_s, double min_pause_s,
                         double guard_s) {
  Segmentation g;
  g.dt_s = dt_s;
  const size_t n = x.size();
  g.steady.assign(n, 0);
  if (n < 4) return g;
  // S1: a running median over ~2 s keeps pauses and removes in-training spikes.
  const auto w = static_cast<size_t>(std::max(1L, std::lround(2.0 / dt_s))) | 1u;
  const std::vector<double> s = running_median(x, w);
  // S2: training level and its spread from the upper cluster; low = well below it.
  const double thr2 = two_means_threshold(s);
  std::vector<double> hi;
  for (double v : s)
    if (v >= thr2) hi.push_back(v);
  g.train_w = median(hi);
  std::vector<double> dev;
  for (double v : hi) dev.push_back(std::fabs(v - g.train_w));
  g.train_sd_w = 1.4826 * median(dev);
  g.threshold_w = g.train_w - std::max(5 * g.train_sd_w, 0.10 * g.train_w);
  // S3: low runs, their edges where the raw series crosses the midpoint to the run's level.
  std::vector<LowRun> runs;
  for (size_t k = 0; k < n;) {
    if (s[k] >= g.threshold_w) {
      ++k;
      continue;
    }
    size_t e = k;
    while (e < n && s[e] < g.threshold_w) ++e;
    std::vector<double> in(x.begin() + static_cast<std::ptrdiff_t>(k),
                           x.begin() + static_cast<std::ptrdiff_t>(e));
    LowRun r{k, e, median(in), false};
    const double mid = 0.5 * (r.level_w + g.train_w);
    while (r.begin > 0 && x[r.begin - 1] < mid) --r.begin;
    while (r.end < n && x[r.end] < mid) ++r.end;
    if (!runs.empty() && r.begin <= runs.back().end) {
      runs.back().end = std::max(runs.back().end, r.end);
    } else {
      runs.push_back(r);
    }
    k = std::max(e, r.end);
  }
  const auto min_run = static_cast<size_t>(std::ceil(min_pause_s / dt_s));
  // S4: a run touching the start is the lead-in (idle, setup or a pause the log starts in); one
  // touching the end is the tail. Without a lead-in the log starts in training.
  g.train_begin = 0;
  g.train_end = n;
  if (!runs.empty() && runs.front().begin == 0 &&
      runs.front().end - runs.front().begin >= min_run) {
    g.train_begin = runs.front().end;
    std::vector<double> in(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(g.train_begin));
    g.lead_w = median(in);
    g.notes.push_back(
        strprintf("the first %.1f s (median %.0f W/GPU, training %.0f W) come before "
                  "training (idle, setup, or a pause the log starts in): left out",
                  static_cast<double>(g.train_begin) * dt_s, g.lead_w, g.train_w));
  } else {
    g.starts_in_training = true;
  }
  if (!runs.empty() && runs.back().end == n && runs.back().begin > g.train_begin) {
    g.train_end = runs.back().begin;
    std::vector<double> in(x.begin() + static_cast<std::ptrdiff_t>(g.train_end), x.end());
    g.tail_w = median(in);
    g.notes.push_back(strprintf("the last %.1f s (median %.0f W/GPU) come after training: left out",
                                static_cast<double>(n - g.train_end) * dt_s, g.tail_w));
  }
  for (const auto& r : runs) {
    if (r.begin >= g.train_begin && r.end <= g.train_end && r.begin > 0 && r.end < n &&
        r.end - r.begin >= min_run && !(r.begin == 0)) {
      g.pauses.push_back(r);
    }
  }
  // S5: two pause populations when the lengths split clearly (Otsu on log length): the long
  // ones at least 2.5× the short ones (geometric means), a gap of 1.5× between the classes,
  // and at most half of the pauses long.
  std::vector<double> ll;
  for (const auto& p : g.pauses)
    ll.push_back(std::log(static_cast<double>(p.end - p.begin) * dt_s));
  if (ll.size() >= 3) {
    std::vector<double> srt = ll;
    std::sort(srt.begin(), srt.end());
    double best = -1;
    size_t cut = 0;
    for (size_t i = 1; i < srt.size(); ++i) {
      double m0 = 0, m1 = 0;
      for (size_t q = 0; q < i; ++q) m0 += srt[q] / static_cast<double>(i);
      for (size_t q = i; q < srt.size(); ++q) m1 += srt[q] / static_cast<double>(srt.size() - i);
      const double w0 = static_cast<double>(i), w1 = static_cast<double>(srt.size() - i);
      const double between = w0 * w1 * (m1 - m0) * (m1 - m0);
      if (between > best) best = between, cut = i;
    }
    double m0 = 0, m1 = 0;
    for (size_t q = 0; q < cut; ++q) m0 += srt[q] / static_cast<double>(cut);
    for (size_t q = cut; q < srt.size(); ++q) m1 += srt[q] / static_cast<double>(srt.size() - cut);
    const bool split = m1 - m0 >= std::log(2.5) && srt[cut] - srt[cut - 1] >= std::log(1.5) &&
                       2 * (srt.size() - cut) <= srt.size();
    if (split) {
      const double c = 0.5 * (srt[cut] + srt[cut - 1]);
      for (size_t i = 0; i < g.pauses.size(); ++i) g.pauses[i].is_long = ll[i] > c;
    }
  }
  // S6: spacings and lengths per population; partial first and last bursts left out.
  std::vector<double> lw_reg, lw_long;
  double since_regular = 0, since_long = 0, total = 0;
  bool regular_complete = !g.starts_in_training, long_complete = !g.starts_in_training;
  std::vector<double> long_spacings;
  size_t prev_end = g.train_begin;
  for (const auto& p : g.pauses) {
    const double burst = static_cast<double>(p.begin - prev_end) * dt_s;
    since_regular += burst;
    since_long += burst;
    total += burst;
    const double len = static_cast<double>(p.end - p.begin) * dt_s;
    if (p.is_long) {
      g.long_length_s.push_back(len);
      lw_long.push_back(p.level_w);
      if (long_complete) long_spacings.push_back(since_long);
      since_long = 0;
      long_complete = true;
    } else {
      g.regular_length_s.push_back(len);
      lw_reg.push_back(p.level_w);
      if (regular_complete) g.regular_spacing_s.push_back(since_regular);
      since_regular = 0;
      regular_complete = true;
    }
    prev_end = p.end;
  }
  total += static_cast<double>(g.train_end - prev_end) * dt_s;
  g.train_time_s = total;
  g.regular_w = median(lw_reg);
  g.long_w = median(lw_long);
  if (!g.long_length_s.empty()) {
    if (long_spacings.size() >= 2) {
      double sum = 0;
      for (double v : long_spacings) sum += v;
      g.long_spacing_s = sum / static_cast<double>(long_spacings.size());
    } else {
      g.long_spacing_s = total / static_cast<double>(g.long_length_s.size());
    }
    g.notes.push_back(
        strprintf("two pause populations: %.0f regular (median %.1f s) and %.0f long "
                  "(median %.1f s): the long ones are modelled as checkpoints",
                  static_cast<double>(g.regular_length_s.size()), median(g.regular_length_s),
                  static_cast<double>(g.long_length_s.size()), median(g.long_length_s)));
  }
  if (g.starts_in_training && !g.pauses.empty()) {
    g.notes.push_back(
        strprintf("the log starts in training: its first burst (%.1f s) is partial and "
                  "not counted as a spacing",
                  static_cast<double>(g.pauses.front().begin - g.train_begin) * dt_s));
  }
  // S7: steady training samples, guard_s away from any low sample and from the span's edges.
  const auto guard = static_cast<size_t>(std::ceil(guard_s / dt_s));
  std::vector<char> low(n, 0);
  for (size_t k = 0; k < n; ++k) low[k] = s[k] < g.threshold_w;
  for (const auto& p : g.pauses)
    std::fill(low.begin() + static_cast<std::ptrdiff_t>(p.begin),
              low.begin() + static_cast<std::ptrdiff_t>(p.end), 1);
  size_t last_low = SIZE_MAX;
  std::vector<size_t> dist(n, SIZE_MAX);
  for (size_t k = 0; k < n; ++k) {
    if (low[k] || k < g.train_begin || k >= g.train_end) last_low = k;
    dist[k] = last_low == SIZE_MAX ? SIZE_MAX : k - last_low;
  }
  last_low = SIZE_MAX;
  for (size_t k = n; k-- > 0;) {
    if (low[k] || k < g.train_begin || k >= g.train_end) last_low = k;
    const size_t d = last_low == SIZE_MAX ? SIZE_MAX : last_low - k;
    dist[k] = std::min(dist[k], d);
    g.steady[k] = dist[k] > guard;
  }
  return g;
}

}  // namespace fw::sim

#pragma once
// Nelder–Mead minimisation over a box, for the simulator's fits (sim/fit.cpp: cap sweeps and
// traces; sim/pipeline_fit.cpp: pipeline work). Points are clamped into [lo, hi]; stops after
// max_evals evaluations or when the simplex's values agree within 1e-9. `evals` (optional)
// receives the count. nelder_mead_starts: the same from each start in turn, the point of least
// f over them (the first on ties), `evals` the sum.

#include <algorithm>
#include <array>
#include <functional>
#include <utility>
#include <vector>

namespace fw::sim {

template <size_t N>
std::array<double, N> nelder_mead(const std::function<double(const std::array<double, N>&)>& f,
                                  std::array<double, N> x0, const std::array<double, N>& step,
                                  const std::array<double, N>& lo, const std::array<double, N>& hi,
                                  int max_evals, int* evals) {
  using P = std::array<double, N>;
  auto clamp = [&](P p) {
    for (size_t i = 0; i < N; ++i) p[i] = std::clamp(p[i], lo[i], hi[i]);
    return p;
  };
  std::vector<std::pair<double, P>> s;
  s.push_back({f(clamp(x0)), clamp(x0)});
  for (size_t i = 0; i < N; ++i) {
    P p = x0;
    p[i] += step[i];
    p = clamp(p);
    if (p == x0) p[i] = std::clamp(x0[i] - step[i], lo[i], hi[i]);
    s.push_back({f(p), p});
  }
  int n = static_cast<int>(N) + 1;
  auto lerp = [&](const P& a, const P& b, double t) {
    P r;
    for (size_t i = 0; i < N; ++i) r[i] = a[i] + t * (b[i] - a[i]);
    return clamp(r);
  };
  while (n < max_evals) {
    std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (s.back().first - s.front().first < 1e-9) break;
    P c{};
    for (size_t k = 0; k < N; ++k)
      for (size_t i = 0; i < N; ++i) c[i] += s[k].second[i] / N;
    const P xr = lerp(s.back().second, c, 2.0);
    const double fr = f(xr);
    ++n;
    if (fr < s.front().first) {
      const P xe = lerp(s.back().second, c, 3.0);
      const double fe = f(xe);
      ++n;
      s.back() = fe < fr ? std::make_pair(fe, xe) : std::make_pair(fr, xr);
    } else if (fr < s[N - 1].first) {
      s.back() = {fr, xr};
    } else {
      const P xc = lerp(s.back().second, c, 0.5);
      const double fc = f(xc);
      ++n;
      if (fc < s.back().first) {
        s.back() = {fc, xc};
      } else {  // shrink towards the best
        for (size_t k = 1; k <= N; ++k) {
          s[k].second = lerp(s[0].second, s[k].second, 0.5);
          s[k].first = f(s[k].second);
          ++n;
        }
      }
    }
  }
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (evals) *evals = n;
  return s.front().second;
}

template <size_t N>
std::array<double, N> nelder_mead_starts(
    const std::function<double(const std::array<double, N>&)>& f,
    const std::vector<std::array<double, N>>& starts, const std::array<double, N>& step,
    const std::array<double, N>& lo, const std::array<double, N>& hi, int max_evals, int* evals) {
  std::array<double, N> best{};
  double best_f = 1e300;
  int total = 0;
  for (const auto& x0 : starts) {
    int n = 0;
    const auto x = nelder_mead<N>(f, x0, step, lo, hi, max_evals, &n);
    total += n;
    if (const double v = f(x); v < best_f) {
      best_f = v;
      best = x;
    }
  }
  if (evals) *evals = total;
  return best;
}

}  // namespace fw::sim

// In-training dynamics of a power log (sim/fit_dynamics.hpp).

#include "sim/fit_dynamics.hpp"

#include <algorithm>
#include <cmath>

namespace fw::sim {
namespace {

// Contiguous runs [a, b) of set samples.
std::vector<std::pair<size_t, size_t>> runs_of(const std::vector<char>& m) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t k = 0; k < m.size();) {
    if (!m[k]) {
      ++k;
      continue;
    }
    size_t e = k;
    while (e < m.size() && m[e]) ++e;
    if (e - k >= 4) out.emplace_back(k, e);
    k = e;
  }
  return out;
}

// x minus the mean of each run (NaN outside runs).
std::vector<double> demeaned(const std::vector<double>& x,
                             const std::vector<std::pair<size_t, size_t>>& runs) {
  std::vector<double> d(x.size(), NAN);
  for (const auto& [a, b] : runs) {
    double m = 0;
    for (size_t k = a; k < b; ++k) m += x[k];
    m /= static_cast<double>(b - a);
    for (size_t k = a; k < b; ++k) d[k] = x[k] - m;
  }
  return d;
}

double var_of(const std::vector<double>& d) {
  double s = 0, n = 0;
  for (double v : d)
    if (v == v) s += v * v, n += 1;
  return n > 1 ? s / n : 0;
}

}  // namespace

TrainingDynamics training_dynamics(const PowerLog& log, const std::vector<char>& steady,
                                   double max_lag_s) {
  TrainingDynamics t;
  const size_t n = log.gpu_w.empty() ? 0 : log.gpu_w[0].size();
  const auto runs = runs_of(steady);
  if (runs.empty() || n == 0) return t;
  const double gpus = static_cast<double>(log.gpu_w.size());
  std::vector<double> node(n, 0.0);
  for (const auto& g : log.gpu_w)
    for (size_t k = 0; k < n; ++k) node[k] += g[k] / gpus;
  const std::vector<double> d = demeaned(node, runs);
  for (const auto& [a, b] : runs) t.samples += b - a;
  t.node_var_w2 = var_of(d);
  // D3: per GPU, the deviation from the node's deviation is the independent part.
  double indep = 0;
  for (const auto& g : log.gpu_w) {
    std::vector<double> dg = demeaned(g, runs);
    for (size_t k = 0; k < n; ++k)
      if (dg[k] == dg[k]) dg[k] -= d[k];
    indep += var_of(dg) / gpus;
  }
  t.indep_var_w2 = gpus > 1 ? indep * gpus / (gpus - 1) : 0;
  t.common_var_w2 = std::max(0.0, t.node_var_w2 - t.indep_var_w2 / gpus);
  // D1: autocorrelation, pairs inside one run.
  const auto max_lag = static_cast<size_t>(std::lround(max_lag_s / log.dt_s));
  t.acf.assign(max_lag + 1, 0.0);
  for (size_t l = 0; l <= max_lag; ++l) {
    double num = 0, den = 0;
    for (const auto& [a, b] : runs) {
      for (size_t k = a; k < b; ++k) den += d[k] * d[k];
      for (size_t k = a; k + l < b; ++k) num += d[k] * d[k + l];
    }
    t.acf[l] = den > 0 ? num / den : 0;
  }
  t.period_s = dominant_period_s(t.acf, log.dt_s, &t.acf_at_period);
  return t;
}

double dominant_period_s(const std::vector<double>& r, double dt_s, double* peak) {
  double best = -1, lag = 0;
  double lowest = r.empty() ? 0 : r[0];
  for (size_t l = 1; l + 1 < r.size(); ++l) {
    lowest = std::min(lowest, r[l]);
    if (l < 2 || !(r[l] > r[l - 1] && r[l] >= r[l + 1])) continue;
    if (r[l] < 0.3 || r[l] - lowest < 0.15 || r[l] <= best) continue;
    best = r[l];
    const double den = r[l - 1] - 2 * r[l] + r[l + 1];
    const double off = den < 0 ? 0.5 * (r[l - 1] - r[l + 1]) / den : 0;
    lag = (static_cast<double>(l) + std::clamp(off, -0.5, 0.5)) * dt_s;
  }
  if (peak) *peak = best > 0 ? best : 0;
  return lag;
}

double box_ar1_var_factor(double rho, int taps) { return box_ar1_acf(rho, taps, 0); }

double box_ar1_acf(double rho, int taps, int lag) {
  // Cov of (1/n)Σ_i e_{t−i} and (1/n)Σ_j e_{t+lag−j} for unit-variance AR(1): ρ^|lag+i−j|.
  double s = 0;
  for (int i = 0; i < taps; ++i)
    for (int j = 0; j < taps; ++j) s += std::pow(rho, std::abs(lag - j + i));
  return s / (static_cast<double>(taps) * taps) / (lag == 0 ? 1.0 : box_ar1_var_factor(rho, taps));
}

}  // namespace fw::sim

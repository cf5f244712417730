// Fit of an uncapped power log (sim/fit.hpp, part 2): levels, duty cycle, spread, noise.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "sim/fit.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw::sim {
namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}

// Per-GPU mean power of the node at each sample.
std::vector<double> node_mean(const PowerLog& log) {
  const size_t n = log.gpu_w.empty() ? 0 : log.gpu_w[0].size();
  std::vector<double> out(n, 0.0);
  for (const auto& g : log.gpu_w)
    for (size_t k = 0; k < n; ++k) out[k] += g[k] / static_cast<double>(log.gpu_w.size());
  return out;
}

// Two-level split (1-D 2-means) of a series: low and high level.
void two_levels(const std::vector<double>& v, double* lo, double* hi) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  *lo = s[s.size() / 10];
  *hi = s[s.size() * 9 / 10];
  for (int it = 0; it < 30; ++it) {
    const double thr = 0.5 * (*lo + *hi);
    double sl = 0, sh = 0, nl = 0, nh = 0;
    for (double x : v) (x < thr ? (sl += x, nl += 1) : (sh += x, nh += 1));
    if (nl > 0) *lo = sl / nl;
    if (nh > 0) *hi = sh / nh;
  }
}

// sd of a 1 s boxcar mean of an AR(1) process of unit sd and correlation time tau_s.
double boxcar_1s_factor(double tau_s) {
  const double r = 1.0 / tau_s;
  return std::sqrt(2.0 / (r * r) * (r - 1.0 + std::exp(-r)));
}

// Scales the fwd/bwd SM activity of `model` until the uncapped power per GPU is target_w.
JobMix solve_level(const GpuPreset& gpu, const PretrainModel& base, double target_w,
                   const SimParams& sim) {
  JobMix mix{base.load[1].u, base.load[1].m, base.load[1].c, 1 - base.share[0] - base.share[1]};
  double lo = 0.0, hi = 2.0;
  for (int it = 0; it < 24; ++it) {
    mix.sm = 0.5 * (lo + hi);
    const auto p = simulate_sweep(gpu, apply_mix(base, mix), {gpu.max_cap_w}, sim);
    (p[0].power_w < target_w ? lo : hi) = mix.sm;
  }
  mix.sm = 0.5 * (lo + hi);
  return mix;
}

}  // namespace

Result<PowerLog> read_power_log(const std::string& path, double dt_s) {
  if (!(dt_s > 0)) return Status::InvalidArgument("resampling step must be > 0");
  TraceReaderOptions opt;
  opt.fields = 0;
  FW_ASSIGN_OR_RETURN(auto r, TraceReader::open(path, opt));
  std::vector<std::vector<double>> sum, cnt;
  TraceRow row;
  double t0 = 0;
  bool first = true;
  while (r->next(row)) {
    if (first) t0 = row.time_s, first = false;
    const int g = row.reading.gpu;
    const auto k = static_cast<size_t>(std::max(0.0, std::floor((row.time_s - t0) / dt_s)));
    if (static_cast<int>(sum.size()) <= g) sum.resize(g + 1), cnt.resize(g + 1);
    if (sum[g].size() <= k) sum[g].resize(k + 1, 0.0), cnt[g].resize(k + 1, 0.0);
    sum[g][k] += row.reading.power_w;
    cnt[g][k] += 1;
  }
  FW_RETURN_IF_ERROR(r->status());
  PowerLog log;
  log.dt_s = dt_s;
  size_t n = 0;
  for (const auto& s : sum) n = std::max(n, s.size());
  for (size_t g = 0; g < sum.size(); ++g) {
    if (sum[g].empty()) continue;
    std::vector<double> w(n, NAN);
    double last = NAN;
    for (size_t k = 0; k < n; ++k) {
      if (k < cnt[g].size() && cnt[g][k] > 0) last = sum[g][k] / cnt[g][k];
      w[k] = last;
    }
    const double first_w = *std::find_if(w.begin(), w.end(), [](double x) { return x == x; });
    for (double& x : w)
      if (!(x == x)) x = first_w;
    log.gpu_w.push_back(std::move(w));
  }
  if (log.gpu_w.empty() || n < 4) return Status::InvalidArgument(path + ": too few samples");
  return log;
}

// Reason for length: the fitting steps share the segmentation; split they would pass it
// around in a struct of the same size.
// Long by design: the fit is a fixed sequence of estimates (level, noise, spread, low phases)
// sharing the log.
Result<TraceFit> fit_trace(const PowerLog& log, const GpuPreset& gpu,
                           const std::string& base_workload, const SimParams& sim) {
  const PretrainModel* base = find_pretrain_model(base_workload);
  if (!base) return Status::InvalidArgument("unknown workload preset '" + base_workload + "'");
  const std::vector<double> node = node_mean(log);
  TraceFit f;
  f.gpus = static_cast<int>(log.gpu_w.size());
  f.base_workload = base_workload;
  two_levels(node, &f.low_w, &f.high_w);
  const double thr = 0.5 * (f.low_w + f.high_w);
  const bool bimodal = f.high_w - f.low_w > 0.15 * f.high_w;
  // Trim to the span from the first to the last high sample (job start and end idle).
  size_t a = 0, b = node.size();
  while (a < b && node[a] < thr) ++a;
  while (b > a && node[b - 1] < thr) --b;
  f.first_sample = a;
  f.samples = b - a;
  f.duration_s = static_cast<double>(b - a) * log.dt_s;
  std::vector<size_t> starts, ends;
  const auto min_run = static_cast<size_t>(std::ceil(2.0 / log.dt_s));
  std::vector<char> high(node.size(), 1);
  for (size_t k = a; k < b;) {
    if (node[k] >= thr) {
      ++k;
      continue;
    }
    size_t e = k;
    while (e < b && node[e] < thr) ++e;
    if (e - k >= min_run && bimodal) {
      starts.push_back(k);
      ends.push_back(e);
      std::fill(high.begin() + k, high.begin() + e, 0);
    }
    k = e;
  }
  std::vector<double> lows, gaps, lens;
  for (size_t i = 0; i < starts.size(); ++i) {
    lens.push_back(static_cast<double>(ends[i] - starts[i]) * log.dt_s);
    for (size_t k = starts[i]; k < ends[i]; ++k) lows.push_back(node[k]);
    const size_t prev_end = i == 0 ? a : ends[i - 1];
    gaps.push_back(static_cast<double>(starts[i] - prev_end) * log.dt_s);
  }
  f.low_phases = static_cast<int>(starts.size());
  if (f.low_phases > 0) {
    // Lognormal period and length: sigma from the logs, median = mean · exp(−σ²/2).
    std::vector<double> lg, ll;
    for (double g : gaps) lg.push_back(std::log(std::max(g, log.dt_s)));
    for (double l : lens) ll.push_back(std::log(l));
    const bool spread = f.low_phases > 2;
    f.jitter = spread ? std::clamp(sd_of(lg), 0.05, 1.0) : 0.1;
    f.length_jitter = spread ? std::clamp(sd_of(ll), 0.05, 1.0) : 0.1;
    f.every_s = mean_of(gaps) * std::exp(-0.5 * f.jitter * f.jitter);
    f.length_s = mean_of(lens) * std::exp(-0.5 * f.length_jitter * f.length_jitter);
    f.low_w = mean_of(lows);
    // Level of the low phases: P = P_ctx + K_sm·u + K_mem·m at full clock, m = 0.10.
    f.duty_mem = 0.10;
    f.duty_sm = (f.low_w - gpu.idle_ctx_w - gpu.mem_power_w * f.duty_mem) / gpu.sm_power_w;
    if (f.duty_sm < 0) {
      f.duty_sm = 0;
      f.duty_mem = std::max(0.0, (f.low_w - gpu.idle_ctx_w) / gpu.mem_power_w);
    }
  }
  // Steady level and spread over high samples away from transitions (±2 s).
  std::vector<double> gpu_means;
  std::vector<double> dev;
  const auto guard = static_cast<size_t>(std::ceil(2.0 / log.dt_s));
  for (const auto& g : log.gpu_w) {
    std::vector<double> v;
    for (size_t k = a + guard; k + guard < b; ++k) {
      bool steady = true;
      for (size_t q = k - guard; q <= k + guard && steady; ++q) steady = high[q] && node[q] >= thr;
      if (steady) v.push_back(g[k]);
    }
    if (v.empty()) v.push_back(mean_of(g));
    gpu_means.push_back(mean_of(v));
    for (double x : v) dev.push_back(x - gpu_means.back());
  }
  f.high_w = mean_of(gpu_means);
  f.offset_sd_frac = gpu_means.size() > 1 ? sd_of(gpu_means) / gpu.tdp_w : 0.0;
  SimParams sp = sim;
  sp.noise_w = 0;
  f.mix = solve_level(gpu, *base, f.high_w, sp);
  // Noise: measured sd beyond the model's own within-iteration swing (both as read).
  const double sd_meas = sd_of(dev);
  JobSpec j;
  j.kind = JobKind::kPretrain;
  j.gpus = {0};
  j.pretrain.model = apply_mix(*base, f.mix);
  Cluster c(sp, {{&gpu, std::string(gpu.name), gpu.max_cap_w}}, {j}, 1);
  std::vector<double> simw;
  Snapshot snap;
  for (int k = 1; k * log.dt_s <= 60; ++k) {
    (void)c.read(k * log.dt_s, snap);
    if (k * log.dt_s > 10) simw.push_back(snap.gpus[0].power_w);
  }
  const double sd_sim = sd_of(simw);
  const double extra = std::sqrt(std::max(0.0, sd_meas * sd_meas - sd_sim * sd_sim));
  f.noise_sd_frac = extra / (gpu.power_avg_1s ? boxcar_1s_factor(1.0) : 1.0) / gpu.tdp_w;
  return f;
}

std::string trace_fit_yaml(const TraceFit& f, const GpuPreset& gpu, const std::string& name) {
  char buf[2000];
  const double every = f.low_phases > 0 ? f.every_s : 0;
  std::snprintf(
      buf, sizeof buf,
      "# Fitted by `flexwatt fit` to a measured uncapped power log (simulated twin).\n"
      "# Measured per GPU: training %.1f W, low phases %.1f W (%d found; median %.1f s of\n"
      "# training between them, %.1f s long); spread sd %.4f of TDP, extra noise sd %.4f of TDP.\n"
      "name: %s\n"
      "duration_s: %.1f\n"
      "sample_period_s: 0.5\n"
      "gpus:\n  - {model: %s, count: %d}\n"
      "budget: {watts: %.0f, scope: node, window_s: 30}\n"
      "jobs:\n"
      "  - name: fitted\n    kind: pretrain\n    workload: %s\n    gpus: %d\n    tp: %d\n"
      "    mix: {sm: %.4f, mem: %.4f, compute_bound: %.4f, comm_share: %.4f}\n"
      "    duty: {every_s: %.2f, length_s: %.2f, jitter: %.3f, length_jitter: %.3f, sm: %.4f, "
      "mem: %.4f}\n"
      "    hetero: {offset_sd: %.4f, noise_sd: %.4f, noise_tau_s: 1.0}\n",
      f.high_w, f.low_w, f.low_phases, f.every_s, f.length_s, f.offset_sd_frac, f.noise_sd_frac,
      name.c_str(), f.duration_s, std::string(gpu.name).c_str(), f.gpus,
      0.5 * (f.low_w + f.high_w) * f.gpus, f.base_workload.c_str(), f.gpus, f.gpus, f.mix.sm,
      f.mix.mem, f.mix.compute_bound, f.mix.comm_share, every, f.length_s, f.jitter,
      f.length_jitter, f.duty_sm, f.duty_mem, f.offset_sd_frac, f.noise_sd_frac);
  return buf;
}

PowerLog slice_log(const PowerLog& log, size_t first, size_t n) {
  PowerLog out;
  out.dt_s = log.dt_s;
  for (const auto& g : log.gpu_w) {
    const size_t a = std::min(first, g.size()), b = std::min(first + n, g.size());
    out.gpu_w.emplace_back(g.begin() + static_cast<std::ptrdiff_t>(a),
                           g.begin() + static_cast<std::ptrdiff_t>(b));
  }
  return out;
}

namespace {
// Trailing 30 s means of the node power (sum over GPUs), one per sample once a window is full.
std::vector<double> trailing30(const PowerLog& log) {
  std::vector<double> node = node_mean(log);
  for (double& x : node) x *= static_cast<double>(log.gpu_w.size());
  const auto w = static_cast<size_t>(std::lround(30.0 / log.dt_s));
  std::vector<double> out;
  double sum = 0;
  for (size_t k = 0; k < node.size(); ++k) {
    sum += node[k];
    if (k >= w) sum -= node[k - w];
    if (k + 1 >= w) out.push_back(sum / static_cast<double>(w));
  }
  return out;
}
}  // namespace

double median_window30_w(const PowerLog& log) {
  std::vector<double> m = trailing30(log);
  if (m.empty()) return 0;
  std::nth_element(m.begin(), m.begin() + static_cast<std::ptrdiff_t>(m.size() / 2), m.end());
  return m[m.size() / 2];
}

LogStats log_stats(const PowerLog& log, double level_w) {
  LogStats s;
  s.level_w = level_w;
  const std::vector<double> node = node_mean(log);
  s.mean_w = mean_of(node) * static_cast<double>(log.gpu_w.size());
  const std::vector<double> m = trailing30(log);
  int64_t above = 0;
  for (double x : m) {
    s.peak30_w = std::max(s.peak30_w, x);
    above += x > level_w;
  }
  s.share_above = m.empty() ? 0 : static_cast<double>(above) / static_cast<double>(m.size());
  return s;
}

}  // namespace fw::sim

#pragma once
// Synthetic "measured" power logs for the fit tests, made without the simulator (so a fit is
// not checked against its own model): per GPU, a schedule of phases (setup, training, regular
// pauses, rare long pauses) at given levels, a per-GPU static offset, a coherent (job-wide)
// component in training (an optional periodic step waveform plus AR(1) noise) and independent
// per-GPU AR(1) noise; true power at 0.1 s, read as a trailing 1 s mean (Hopper) or
// instantaneously, then averaged into cells of 0.5 s (what `read_power_log` does to a 100 ms
// nvidia-smi log). Also node statistics the tests compare (their own code, not the report's).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sim/fit.hpp"
#include "sim/scenario.hpp"

namespace fw::sim::synth {

struct LogSpec {
  int gpus = 8;
  double duration_s = 1800;
  uint64_t seed = 1;
  bool avg_1s = true;          // Hopper's power.draw
  double train_w = 430;        // per GPU, mean level of training
  double offset_sd_w = 5;      // per-GPU static offsets
  double common_sd_w = 0;      // coherent AR(1) noise in training (whole job)
  double common_tau_s = 0.3;   //
  double indep_sd_w = 10;      // independent AR(1) noise per GPU
  double indep_tau_s = 0.5;    //
  double step_s = 0;           // periodic step waveform (0: none)
  double step_amp_w = 0;       // its half peak-to-peak (square wave, 70 % high)
  double setup_s = 0;          // a setup phase at setup_w before training
  double setup_w = 116;        //
  double pause_every_s = 0;    // training between regular pauses (lognormal median)
  double pause_jitter = 0.05;  //
  double pause_s = 15;         // regular pause length (lognormal median)
  double pause_len_jitter = 0.05;
  double pause_w = 160;
  int long_every = 0;     // every long_every-th pause is a long one (0: none)
  double long_s = 100;    // its length (uniform ±10 %)
  double long_w = 150;    //
  double skip_s = 0;      // the log starts this far into the job (mid-training start)
  double pause_sd_w = 2;  // noise in pauses
};

// Phase of the job at each 0.1 s tick: 0 training, 1 regular pause, 2 long pause, 3 setup.
inline std::vector<int> schedule(const LogSpec& s, std::mt19937_64& rng, size_t ticks) {
  std::vector<int> ph;
  ph.reserve(ticks);
  std::lognormal_distribution<double> every(std::log(std::max(s.pause_every_s, 1e-3)),
                                            s.pause_jitter);
  std::lognormal_distribution<double> len(std::log(s.pause_s), s.pause_len_jitter);
  std::uniform_real_distribution<double> u(0.9, 1.1);
  auto push = [&](int p, double secs) {
    for (long k = 0; k < std::lround(secs / 0.1) && ph.size() < ticks; ++k) ph.push_back(p);
  };
  push(3, s.setup_s);
  int n = 0;
  while (ph.size() < ticks) {
    if (s.pause_every_s <= 0) {
      push(0, 1e9);
      break;
    }
    push(0, every(rng));
    ++n;
    if (s.long_every > 0 && n % s.long_every == 0) {
      push(2, s.long_s * u(rng));
    } else {
      push(1, len(rng));
    }
  }
  return ph;
}

inline PowerLog make(const LogSpec& s) {
  std::mt19937_64 rng(s.seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  const double dt = 0.1;
  const size_t skip = static_cast<size_t>(std::lround(s.skip_s / dt));
  const size_t ticks = static_cast<size_t>(std::lround(s.duration_s / dt)) + skip + 10;
  const std::vector<int> ph = schedule(s, rng, ticks);
  std::vector<double> offs(s.gpus);
  for (double& o : offs) o = s.offset_sd_w * nd(rng);
  // Coherent component.
  std::vector<double> common(ticks, 0.0);
  const double rc = std::exp(-dt / s.common_tau_s);
  double c = 0;
  std::uniform_real_distribution<double> u01(0, 1);
  const double phase0 = u01(rng);
  for (size_t k = 0; k < ticks; ++k) {
    c = rc * c + std::sqrt(1 - rc * rc) * s.common_sd_w * nd(rng);
    double wave = 0;
    if (s.step_s > 0) {
      const double x = std::fmod(static_cast<double>(k) * dt / s.step_s + phase0, 1.0);
      wave = x < 0.7 ? s.step_amp_w * 0.6 : -s.step_amp_w * 1.4;  // mean 0
    }
    common[k] = c + wave;
  }
  PowerLog log;
  log.dt_s = 0.5;
  log.gpu_w.resize(s.gpus);
  const double ri = std::exp(-dt / s.indep_tau_s);
  for (int g = 0; g < s.gpus; ++g) {
    double e = 0;
    std::vector<double> truth(ticks);
    for (size_t k = 0; k < ticks; ++k) {
      e = ri * e + std::sqrt(1 - ri * ri) * s.indep_sd_w * nd(rng);
      double p = 0;
      switch (ph[k]) {
        case 0:
          p = s.train_w + offs[g] + common[k] + e;
          break;
        case 1:
          p = s.pause_w + s.pause_sd_w * nd(rng);
          break;
        case 2:
          p = s.long_w + s.pause_sd_w * nd(rng);
          break;
        default:
          p = s.setup_w + s.pause_sd_w * nd(rng);
          break;
      }
      truth[k] = std::max(p, 30.0);
    }
    std::vector<double> read(ticks);
    double acc = 0;
    for (size_t k = 0; k < ticks; ++k) {
      acc += truth[k];
      if (k >= 10) acc -= truth[k - 10];
      read[k] = s.avg_1s ? acc / static_cast<double>(std::min<size_t>(k + 1, 10)) : truth[k];
    }
    for (size_t k = skip; k + 5 <= ticks; k += 5) {
      if (log.gpu_w[g].size() * 0.5 >= s.duration_s) break;
      double m = 0;
      for (size_t q = 0; q < 5; ++q) m += read[k + q];
      log.gpu_w[g].push_back(m / 5);
    }
  }
  return log;
}

// ---- Node statistics of the tests ----------------------------------------------------------
inline std::vector<double> node(const PowerLog& l) {
  std::vector<double> n(l.gpu_w[0].size(), 0.0);
  for (const auto& g : l.gpu_w)
    for (size_t k = 0; k < n.size(); ++k) n[k] += g[k];
  return n;
}
inline double mean(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}
inline std::vector<double> trailing(const std::vector<double>& x, double dt, double w_s) {
  const auto w = static_cast<size_t>(std::max(1L, std::lround(w_s / dt)));
  std::vector<double> out;
  double s = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    s += x[k];
    if (k >= w) s -= x[k - w];
    if (k + 1 >= w) out.push_back(s / static_cast<double>(w));
  }
  return out;
}
inline double share_above(const std::vector<double>& x, double dt, double w_s, double b) {
  const auto m = trailing(x, dt, w_s);
  return static_cast<double>(std::count_if(m.begin(), m.end(), [&](double v) { return v > b; })) /
         static_cast<double>(m.size());
}
inline double peak(const std::vector<double>& x, double dt, double w_s) {
  const auto m = trailing(x, dt, w_s);
  return *std::max_element(m.begin(), m.end());
}
// Autocorrelation of x at `lag` samples over the samples where mask is set at both ends
// (each masked sample minus the masked mean).
inline double acf(const std::vector<double>& x, const std::vector<char>& mask, size_t lag) {
  double m = 0, n = 0;
  for (size_t k = 0; k < x.size(); ++k)
    if (mask[k]) m += x[k], n += 1;
  m /= n;
  double num = 0, den = 0;
  for (size_t k = 0; k < x.size(); ++k)
    if (mask[k]) den += (x[k] - m) * (x[k] - m);
  for (size_t k = 0; k + lag < x.size(); ++k)
    if (mask[k] && mask[k + lag]) num += (x[k] - m) * (x[k + lag] - m);
  return num / den;
}
// Samples in training: node per-GPU mean above `thr_w`, ±4 s from any sample below it.
inline std::vector<char> training_mask(const std::vector<double>& node_w, int gpus, double thr_w) {
  std::vector<char> m(node_w.size(), 0);
  const long g = 8;
  for (size_t k = 0; k < node_w.size(); ++k) {
    bool ok = true;
    for (long q = -g; q <= g && ok; ++q) {
      const long j = static_cast<long>(k) + q;
      if (j < 0 || j >= static_cast<long>(node_w.size())) continue;
      ok = node_w[j] / gpus > thr_w;
    }
    m[k] = ok;
  }
  return m;
}

// Runs a fitted scenario over n samples of dt (seed), node-summed per sample.
inline PowerLog run_twin(const std::string& yaml, size_t n, double dt, uint64_t seed) {
  auto sc = parse_scenario(yaml, "twin", {});
  PowerLog out;
  out.dt_s = dt;
  if (!sc.ok()) {
    std::printf("twin scenario: %s\n", sc.status().message().c_str());
    return out;
  }
  out.gpu_w.resize(sc->gpus.size());
  auto plant = make_cluster(*sc, seed);
  Snapshot snap;
  for (size_t k = 1; k <= n; ++k) {
    (void)plant->read(static_cast<double>(k) * dt, snap);
    for (size_t g = 0; g < snap.gpus.size(); ++g) out.gpu_w[g].push_back(snap.gpus[g].power_w);
  }
  return out;
}

}  // namespace fw::sim::synth

#pragma once
// DecisionCost: what the calls of controllers' update() cost on this machine. A measurement
// only: it never feeds back into a loop, a plant or a JSON that must be identical run to run.
//
// Per call: the wall time (steady clock, so it includes any wait inside the call, e.g. mpc's
// wait for its off-thread search) and the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID:
// work done by other threads is not in it). Kept: the count, the sums, the maxima and a
// log-binned histogram of each (bins kBinRatio wide from kBinFloorS), so the costs of several
// episodes merge() and a quantile comes out within one bin. Quantiles are conservative: the
// upper edge of the bin holding the q-th call, capped at the maximum (never below the true
// order statistic, at most kBinRatio above it).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <vector>

namespace fw {

// The calling thread's CPU time, s (CLOCK_THREAD_CPUTIME_ID; 0 where the clock is missing).
inline double thread_cpu_s() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct DecisionCost {
  static constexpr double kBinFloorS = 1e-8;  // 10 ns: bin 0 holds everything below
  static constexpr double kBinRatio = 1.05;   // each bin 5 % wider than the last
  static constexpr int kBins = 520;           // up to 10 ns · 1.05^520 ≈ 1000 s

  int64_t calls = 0;
  double wall_sum_s = 0, wall_max_s = 0;
  double cpu_sum_s = 0, cpu_max_s = 0;
  std::vector<int64_t> wall_bins, cpu_bins;  // kBins each once a call was added

  // One call's wall and thread-CPU seconds (negative values count as 0).
  void add(double wall_s, double cpu_s) {
    wall_s = std::max(0.0, wall_s);
    cpu_s = std::max(0.0, cpu_s);
    if (wall_bins.empty()) {
      wall_bins.assign(kBins, 0);
      cpu_bins.assign(kBins, 0);
    }
    ++calls;
    wall_sum_s += wall_s;
    cpu_sum_s += cpu_s;
    wall_max_s = std::max(wall_max_s, wall_s);
    cpu_max_s = std::max(cpu_max_s, cpu_s);
    ++wall_bins[static_cast<size_t>(bin(wall_s))];
    ++cpu_bins[static_cast<size_t>(bin(cpu_s))];
  }

  void merge(const DecisionCost& o) {
    if (o.calls == 0) return;
    if (wall_bins.empty()) {
      wall_bins.assign(kBins, 0);
      cpu_bins.assign(kBins, 0);
    }
    calls += o.calls;
    wall_sum_s += o.wall_sum_s;
    cpu_sum_s += o.cpu_sum_s;
    wall_max_s = std::max(wall_max_s, o.wall_max_s);
    cpu_max_s = std::max(cpu_max_s, o.cpu_max_s);
    for (int i = 0; i < kBins; ++i) {
      wall_bins[static_cast<size_t>(i)] += o.wall_bins[static_cast<size_t>(i)];
      cpu_bins[static_cast<size_t>(i)] += o.cpu_bins[static_cast<size_t>(i)];
    }
  }

  double wall_mean_s() const { return calls > 0 ? wall_sum_s / static_cast<double>(calls) : 0; }
  double cpu_mean_s() const { return calls > 0 ? cpu_sum_s / static_cast<double>(calls) : 0; }
  // q in [0, 1]; 0 when no call was added.
  double wall_quantile_s(double q) const { return quantile(wall_bins, wall_max_s, q); }
  double cpu_quantile_s(double q) const { return quantile(cpu_bins, cpu_max_s, q); }

  static int bin(double t_s) {
    if (!(t_s > kBinFloorS)) return 0;
    const int b = static_cast<int>(std::floor(std::log(t_s / kBinFloorS) / std::log(kBinRatio)));
    return std::clamp(b + 1, 0, kBins - 1);
  }
  // The upper edge of bin b (bin 0: the floor).
  static double bin_top_s(int b) { return kBinFloorS * std::pow(kBinRatio, b); }

 private:
  double quantile(const std::vector<int64_t>& bins, double max_s, double q) const {
    if (calls == 0 || bins.empty()) return 0;
    // The rank of the q-th call (1-based, nearest rank).
    const auto rank = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(calls))));
    int64_t seen = 0;
    for (int b = 0; b < kBins; ++b) {
      seen += bins[static_cast<size_t>(b)];
      if (seen >= rank) return b == kBins - 1 ? max_s : std::min(max_s, bin_top_s(b));
    }
    return max_s;
  }
};

}  // namespace fw

// Allocating a site target across 100 jobs (allocation/allocation.hpp), every method side by
// side in one run, on 11-point curves: concave ones (where `optimal` is the exact hull solution)
// and non-concave ones (where `optimal` runs its grid DP). Targets: ≤ 1 ms per allocation for the
// rules and greedy, ≤ 100 ms for `optimal`.

#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "allocation/allocation.hpp"

namespace {

using fw::allocation::Job;
using fw::allocation::Method;

std::vector<Job> jobs(bool concave) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<Job> out;
  for (int i = 0; i < 100; ++i) {
    Job j;
    j.name = "j" + std::to_string(i);
    j.max_slowdown = 0.5;
    const double pmax = 1000 + 30000 * u(rng), tmax = 1000 + 40000 * u(rng);
    const double k = 1 + 2 * u(rng), a = 0.5 + 0.5 * u(rng);
    for (int c = 0; c < 11; ++c) {
      const double x = 0.3 + 0.07 * c;
      double t = 1 - a * std::pow(1 - x, k);
      if (!concave && c > 0 && c < 10) t *= 0.97 + 0.06 * u(rng);
      j.curve.push_back({x * pmax, t * tmax});
    }
    out.push_back(j);
  }
  return out;
}

void BM_Allocate(benchmark::State& state) {
  const Method m = fw::allocation::all_methods()[state.range(0)];
  const bool concave = state.range(1) != 0;
  const auto js = jobs(concave);
  double pmax = 0;
  for (const auto& j : js) pmax += j.curve.back().power_w;
  for (auto _ : state) {
    auto a = fw::allocation::allocate(js, 0.7 * pmax, m);
    benchmark::DoNotOptimize(a.total_throughput);
  }
  state.SetLabel(fw::allocation::method_name(m) + (concave ? " concave" : " non-concave") +
                 " (100 jobs, 30 % cut)");
}
// Every method of all_methods() (the list grew: a fixed {0..4} left optimal, the last, out).
BENCHMARK(BM_Allocate)
    ->ArgsProduct({benchmark::CreateDenseRange(
                       0, static_cast<int>(fw::allocation::all_methods().size()) - 1, 1),
                   {1, 0}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

// Simulator speed: simulated GPU-samples (one GPU reading at a 0.5 s tick) per second of wall
// time on fleet-16xa100, single thread. Target: >= 2 million per core.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "sim/scenario.hpp"

namespace {

void BM_SimFleet16(benchmark::State& state) {
  // Relative to the repository root, where `make bench` runs the benchmarks.
  auto s = fw::sim::load_scenario("scenarios/fleet-16xa100.yaml", {});
  if (!s.ok()) {
    state.SkipWithError(("run from the repository root: " + s.status().message()).c_str());
    return;
  }
  auto plant = fw::sim::make_cluster(*s, 1);
  fw::Snapshot snap;
  double t = 0;
  (void)plant->read(600, snap);  // warm up: every job started, buffers sized
  t = 600;
  const int64_t gpus = static_cast<int64_t>(plant->info().gpus.size());
  for (auto _ : state) {
    t += 0.5;
    (void)plant->read(t, snap);
    benchmark::DoNotOptimize(snap.gpus.data());
  }
  state.counters["gpu_samples_per_s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * gpus), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SimFleet16)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();

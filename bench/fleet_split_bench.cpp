// The coordinator's per-round CPU cost at site scale (docs/fleet.md "Scale"): decoding the
// nodes' registration records and splitting the site budget across them, for 1,000 and 10,000
// nodes of 8 GPUs with one or two jobs each, every allocator side by side in one run. The etcd
// round trip is not in it (it dominates a real round; docs/fleet.md estimates it separately).

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "fleet/allocator.hpp"
#include "fleet/keys.hpp"

namespace {

using fw::fleet::JobRecord;
using fw::fleet::NodeRecord;

// Seeded nodes: A100-like GPUs (100-400 W), draw 40-95 % of nameplate, PFI 1.2-2.6.
std::vector<NodeRecord> nodes(int n) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<NodeRecord> out;
  for (int i = 0; i < n; ++i) {
    NodeRecord r;
    r.node = "node-" + std::to_string(i);
    r.gpus = 8;
    r.nameplate_w = 8 * 400;
    r.min_w = 8 * 100;
    r.draw_w = r.nameplate_w * (0.4 + 0.55 * u(rng));
    r.cap_w = r.nameplate_w;
    r.uncontrolled_w = r.draw_w;
    const int jobs = u(rng) < 0.5 ? 1 : 2;
    for (int j = 0; j < jobs; ++j) {
      JobRecord jr;
      jr.id = r.node + "-job" + std::to_string(j);
      jr.gpus = 8 / jobs;
      jr.draw_w = r.draw_w / jobs;
      jr.pfi = 1.2 + 1.4 * u(rng);
      r.jobs.push_back(jr);
    }
    r.time_unix_s = 1.7e9;
    out.push_back(r);
  }
  return out;
}

const char* const kAllocators[] = {"equal", "proportional", "pfi", "greedy"};

// One split of 70 % of the site's nameplate (a 30 % cut).
void BM_Split(benchmark::State& state) {
  const auto alloc = fw::fleet::make_allocator(kAllocators[state.range(0)]);
  if (!alloc.ok()) {
    state.SkipWithError(alloc.status().message().c_str());
    return;
  }
  const std::vector<NodeRecord> site = nodes(static_cast<int>(state.range(1)));
  double nameplate_w = 0;
  for (const NodeRecord& r : site) nameplate_w += r.nameplate_w;
  for (auto _ : state) {
    std::vector<double> w = (*alloc)->split(0.7 * nameplate_w, site);
    benchmark::DoNotOptimize(w.data());
  }
  state.SetLabel((*alloc)->name());
  state.counters["nodes"] = static_cast<double>(site.size());
}
BENCHMARK(BM_Split)->ArgsProduct({{0, 1, 2, 3}, {1000, 10000}})->Unit(benchmark::kMillisecond);

// Decoding every node's registration (what a coordinator does with each range read).
void BM_DecodeNodes(benchmark::State& state) {
  std::vector<std::string> encoded;
  for (const NodeRecord& r : nodes(static_cast<int>(state.range(0)))) {
    encoded.push_back(fw::fleet::encode(r));
  }
  for (auto _ : state) {
    for (const std::string& e : encoded) {
      auto r = fw::fleet::decode_node(e, "bench");
      benchmark::DoNotOptimize(r.ok());
    }
  }
  state.counters["nodes_per_s"] = benchmark::Counter(static_cast<double>(encoded.size()),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_DecodeNodes)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

// Decision cost of the feed-forward stabilising controller (controllers/
// stabilizing_controller.hpp; docs/stabilization.md) on a 16,384-GPU site, one plant row per
// GPU (the site simulator shows one row per representative rank; on hardware every GPU is a
// row, the worst case timed here):
//   BM_StabilizeDecision/changed    update() when the settings change (a command for every
//                                   GPU: the decisions at the job's events)
//   BM_StabilizeDecision/unchanged  update() in steady training (nothing to write)
// Compare with the site loop's period (the site meter's, 50 ms in the shipped scenarios).

#include <benchmark/benchmark.h>

#include "control/snapshot_ring.hpp"
#include "controllers/stabilizing_controller.hpp"

namespace {

using namespace fw;

constexpr int kGpus = 16384;

struct Site {
  PlantInfo info;
  SnapshotRing ring{4};
  Observation obs;
  Site() {
    info.gpus.assign(kGpus, GpuInfo{"h100-sxm5", 200, 700, 700, 700});
    JobInfo j;
    j.name = "dense-pt";
    j.kind = "pretrain";
    for (int i = 0; i < kGpus; ++i) j.gpus.push_back(i);
    info.jobs.push_back(j);
    Snapshot s;
    s.time_s = 60;
    s.gpus.resize(kGpus);
    for (int i = 0; i < kGpus; ++i) {
      GpuReading& g = s.gpus[static_cast<size_t>(i)];
      g.gpu = i;
      g.power_w = g.power_instant_w = 600;
      g.cap_w = 700;
    }
    JobReading jr;
    jr.phase = Phase::kBackward;
    jr.steps_total = 40;
    jr.checkpoint_in_iters = 40;
    jr.checkpoint_s = 10;
    jr.ends_in_s = 140;
    s.jobs.push_back(jr);
    ring.push(s);
    obs.time_s = 60;
    obs.sample_period_s = 0.05;
    obs.plant = &info;
    obs.history = &ring;
  }
};

void BM_StabilizeDecision(benchmark::State& state, bool changed) {
  Site site;
  StabilizingController c(StabilizingConfig{});
  c.reset(site.info);
  benchmark::DoNotOptimize(c.update(site.obs));  // past the start: steady
  for (auto _ : state) {
    if (changed) c.reset(site.info);  // forgets the last command: the next one writes
    Command cmd = c.update(site.obs);
    benchmark::DoNotOptimize(cmd);
  }
  state.counters["gpus"] = kGpus;
}
BENCHMARK_CAPTURE(BM_StabilizeDecision, changed, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_StabilizeDecision, unchanged, false)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

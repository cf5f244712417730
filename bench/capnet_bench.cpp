// capnet: one decision for a 64-GPU job (features over the last 10 s of 64 GPUs + the shared
// MLP once per GPU + the cap command). Target: <= 50 us (issue 16). Run from the repository
// root (`make bench` does): it loads policies/capnet-a100-alpha0.3.json and the 64-GPU
// scenario.

#include <benchmark/benchmark.h>

#include <cstdlib>

#include "controllers/capnet_online_controller.hpp"
#include "rl/capnet_controller.hpp"
#include "sim/scenario.hpp"
#include "warm_observation.hpp"

namespace {

using namespace fw;

void BM_CapNetDecide64(benchmark::State& state) {
  auto policy = rl::Policy::load("policies/capnet-a100-alpha0.3.json");
  auto scenario = sim::load_scenario("scenarios/caps-pipeline-imbalance-a100x64.yaml", {});
  if (!policy.ok() || !scenario.ok()) {
    state.SkipWithError("run from the repository root (policy or scenario not found)");
    return;
  }
  auto ctrl = rl::CapNetController::create(*policy);
  if (!ctrl.ok()) std::abort();
  auto warm = bench::warm_observation(*scenario, BudgetScope::kJob, 301, 400);
  (*ctrl)->reset(warm->plant->info());
  const Observation& obs = warm->obs;
  for (auto _ : state) {
    const Command& c = (*ctrl)->decide(obs);
    benchmark::DoNotOptimize(c.power_cap_w.data());
  }
  state.SetLabel("64 GPUs: features over 10 s + 10-16-16-1 MLP per GPU + caps");
}
BENCHMARK(BM_CapNetDecide64);

// capnet online (controllers/capnet_online_controller.hpp) on the 64-GPU pipeline job (8 stages
// x 8 pipelines): one decision after calibration (activity over the period's samples, the loss
// from the sentinels, slack and cross-slack per GPU, the caps). Each iteration copies the
// calibrated controller (about 1 KB of state), so the figure includes that copy.
void BM_CapNetOnlineDecide64(benchmark::State& state) {
  auto scenario = sim::load_scenario("scenarios/caps-pp8-a100x64.yaml", {});
  if (!scenario.ok()) {
    state.SkipWithError("run from the repository root (scenario not found)");
    return;
  }
  CapNetOnlineConfig cfg;
  cfg.stages = 8;
  cfg.calib_s = 0;
  auto proto = CapNetOnlineController::create(cfg);
  if (!proto.ok()) std::abort();
  auto warm = bench::warm_observation(*scenario, BudgetScope::kJob, 301, 400);
  proto->reset(warm->plant->info());
  const Observation& obs = warm->obs;
  proto->decide(obs);  // calibrates
  if (!proto->calibrated()) std::abort();
  for (auto _ : state) {
    CapNetOnlineController c = *proto;
    const Command& cmd = c.decide(obs);
    benchmark::DoNotOptimize(cmd.power_cap_w.data());
  }
  state.SetLabel("64 GPUs (8 x 8 pipeline): activity over 6 s + search step + caps");
}
BENCHMARK(BM_CapNetOnlineDecide64);

}  // namespace

BENCHMARK_MAIN();

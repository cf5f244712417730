// capnet: one decision for a 64-GPU job (features over the last 10 s of 64 GPUs + the shared
// MLP once per GPU + the cap command). Target: <= 50 us (issue 16). Run from the repository
// root (`make bench` does): it loads policies/capnet-a100-alpha0.3.json and the 64-GPU
// scenario.

#include <benchmark/benchmark.h>

#include <cstdlib>

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

}  // namespace

BENCHMARK_MAIN();

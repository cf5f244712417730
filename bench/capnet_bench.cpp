// capnet: one decision for a 64-GPU job (features over the last 10 s of 64 GPUs + the shared
// MLP once per GPU + the cap command). Target: <= 50 us (issue 16). Run from the repository
// root (`make bench` does): it loads policies/capnet-a100-alpha0.3.json and the 64-GPU
// scenario.

#include <benchmark/benchmark.h>

#include <cstdlib>

#include "control/budget_units.hpp"
#include "control/snapshot_ring.hpp"
#include "rl/capnet_controller.hpp"
#include "sim/scenario.hpp"

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
  auto plant = sim::make_plant(*scenario, 1);
  (*ctrl)->reset(plant->info());
  const BudgetUnits units = make_budget_units(plant->info(), BudgetScope::kJob);
  SnapshotRing ring(301);
  Snapshot s;
  for (int i = 0; i < 400; ++i) {
    if (!plant->read(0.5 * i, s).ok()) std::abort();
    s.time_s = 0.5 * i;
    ring.push(s);
  }
  Observation obs;
  obs.time_s = 0.5 * 399;
  obs.plant = &plant->info();
  obs.budget = &scenario->budget.entries[0].budget;
  obs.units = &units;
  obs.history = &ring;
  for (auto _ : state) {
    const Command& c = (*ctrl)->decide(obs);
    benchmark::DoNotOptimize(c.power_cap_w.data());
  }
  state.SetLabel("64 GPUs: features over 10 s + 10-16-16-1 MLP per GPU + caps");
}
BENCHMARK(BM_CapNetDecide64);

}  // namespace

BENCHMARK_MAIN();

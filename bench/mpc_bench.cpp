// The mpc planner's decision cost on simulated grpo-7b-a100-drift, one core:
//   BM_MpcDecision   one decision between replans: the twin's observe() and the window shield
//                    (update() with no replan due), on a 300 s history
//   BM_MpcRefit      the twin's refit from 1200 s of observed telemetry (on the decision thread
//                    at a replan decision)
//   BM_MpcReplan     one whole replan with the search inside the decision (plan_delay_s=0):
//                    the refit, then the joint search on the twin over horizon 600 s,
//                    calibration seeds 1000001-2 — at the default plan_delay_s = 10 this runs
//                    off the decision thread, and the decision at a replan costs Refit plus a
//                    thread start
// CPU per 0.5 s tick, amortised at the default replan_s = 600 s: Decision + Replan / 1200.
// Scenarios are read from $FLEXWATT_SOURCE_DIR, ., .. or ../.. (run from the repo root).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "control/budget_units.hpp"
#include "control/snapshot_ring.hpp"
#include "controllers/mpc_controller.hpp"
#include "registry/controller_registry.hpp"
#include "registry/grpo_twin.hpp"
#include "sim/scenario.hpp"

namespace {

using namespace fw;

std::shared_ptr<const sim::Scenario> drift() {
  static std::shared_ptr<const sim::Scenario> s;
  if (s) return s;
  std::vector<std::string> roots = {".", "..", "../.."};
  if (const char* env = std::getenv("FLEXWATT_SOURCE_DIR")) roots.insert(roots.begin(), env);
  for (const auto& r : roots) {
    const std::string path = r + "/scenarios/grpo-7b-a100-drift.yaml";
    if (!std::filesystem::exists(path)) continue;
    auto l = sim::load_scenario(path, {});
    if (l.ok()) s = std::make_shared<const sim::Scenario>(std::move(l).value());
    return s;
  }
  return nullptr;
}

// The controller as the registry makes it (defaults), after `warm_s` of the plant observed.
struct Warm {
  std::unique_ptr<Plant> plant;
  BudgetUnits units;
  SnapshotRing ring{601};
  Observation obs;
  std::unique_ptr<Controller> ctrl;
};

std::unique_ptr<Warm> warm(const sim::Scenario& s, const std::string& spec, double warm_s) {
  auto w = std::make_unique<Warm>();
  w->plant = sim::make_plant(s, 1);
  registry::ControllerEnv env;
  env.info = w->plant->info();
  env.budget = s.budget;
  env.sample_period_s = s.sample_period_s;
  env.duration_s = s.duration_s;
  env.calibration_seeds = {1000001, 1000002};
  env.declared = drift();
  auto parsed = parse_controller_spec(spec);
  if (!parsed.ok()) return nullptr;
  auto p = registry::prepare_controller(*parsed, env);
  if (!p.ok()) return nullptr;
  w->ctrl = p->make(1);
  w->ctrl->reset(env.info);
  w->units = make_budget_units(env.info, s.budget.entries.front().budget.scope);
  w->obs.plant = &w->plant->info();
  w->obs.budget = &s.budget.entries.front().budget;
  w->obs.units = &w->units;
  w->obs.history = &w->ring;
  Snapshot snap;
  for (double t = 0.5; t <= warm_s + 1e-9; t += 0.5) {
    if (!w->plant->read(t, snap).ok()) return nullptr;
    snap.time_s = t;
    w->ring.push(snap);
    w->obs.time_s = t;
    (void)w->ctrl->update(w->obs);  // the twin observes what the controller would
  }
  return w;
}

void BM_MpcDecision(benchmark::State& state) {
  auto s = drift();
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  auto w = warm(*s, "mpc:replan_s=1e7", 300);
  if (!w) return state.SkipWithError("set-up failed");
  for (auto _ : state) benchmark::DoNotOptimize(w->ctrl->update(w->obs));
}
BENCHMARK(BM_MpcDecision)->Unit(benchmark::kMicrosecond);

void BM_MpcReplan(benchmark::State& state) {
  auto s = drift();
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  // replan_s = 10: every update() 10 s after the last replan refits and searches again.
  auto w = warm(*s, "mpc:replan_s=10,plan_delay_s=0", 1200);
  if (!w) return state.SkipWithError("set-up failed");
  for (auto _ : state) {
    w->obs.time_s += 10;  // a replan is due (the history stays the last observed one)
    benchmark::DoNotOptimize(w->ctrl->update(w->obs));
  }
}
BENCHMARK(BM_MpcReplan)->Unit(benchmark::kMillisecond)->Iterations(5);

void BM_MpcRefit(benchmark::State& state) {
  auto s = drift();
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  registry::GrpoTwin twin(s, sim::OnlineFitConfig{});
  auto plant = sim::make_plant(*s, 1);
  Snapshot snap;
  for (double t = 0.5; t <= 1200 + 1e-9; t += 0.5) {
    if (!plant->read(t, snap).ok()) return state.SkipWithError("read failed");
    twin.observe(snap);
  }
  for (auto _ : state) benchmark::DoNotOptimize(twin.refit(1200));
}
BENCHMARK(BM_MpcRefit)->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();

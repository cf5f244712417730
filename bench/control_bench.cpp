// Control-loop cost on the simulated plant, beside the simulator's own step cost.
//   BM_SimStep/<scenario>          one plant read (0.5 s tick) of the simulator
//   BM_LoopTick/<scenario>         one full loop tick (read, history, metrics, uncontrolled)
//   BM_Decision/<controller>       one decision: update() + SafetyLimiter::apply(), on a
//                                  history of 300 s of simulated grpo-7b-a100
// Read per-decision µs against the sim step: the oracle's cost is its look-ahead.
// Scenarios are read from $FLEXWATT_SOURCE_DIR, ., .. or ../.. (run from the repo root).

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "control/control_loop.hpp"
#include "controllers/oracle_controller.hpp"
#include "controllers/pid_controller.hpp"
#include "controllers/static_controller.hpp"
#include "controllers/threshold_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "controllers/zeus_controller.hpp"
#include "sim/scenario.hpp"

namespace {

using namespace fw;

const sim::Scenario* scenario(const std::string& name) {
  static std::map<std::string, std::unique_ptr<sim::Scenario>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second.get();
  std::vector<std::string> roots = {".", "..", "../.."};
  if (const char* env = std::getenv("FLEXWATT_SOURCE_DIR")) roots.insert(roots.begin(), env);
  for (const auto& r : roots) {
    const std::string path = r + "/scenarios/" + name + ".yaml";
    if (!std::filesystem::exists(path)) continue;
    auto s = sim::load_scenario(path, {});
    if (!s.ok()) return nullptr;
    return (cache[name] = std::make_unique<sim::Scenario>(std::move(s).value())).get();
  }
  return nullptr;
}

void BM_SimStep(benchmark::State& state, const char* name) {
  const sim::Scenario* s = scenario(name);
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  auto plant = sim::make_plant(*s, 1);
  Snapshot snap;
  double t = 0;
  for (auto _ : state) {
    t += 0.5;
    benchmark::DoNotOptimize(plant->read(t, snap));
  }
  state.counters["gpus"] = static_cast<double>(plant->info().gpus.size());
}
BENCHMARK_CAPTURE(BM_SimStep, grpo_7b, "grpo-7b-a100")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimStep, fleet_16, "fleet-16xa100")->Unit(benchmark::kMicrosecond);

void BM_LoopTick(benchmark::State& state, const char* name) {
  const sim::Scenario* s = scenario(name);
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  auto plant = sim::make_plant(*s, 1);
  UncontrolledController u(0.5);
  LoopConfig lc;
  lc.duration_s = 1e9;
  ControlLoop loop(*plant, s->budget, lc);
  loop.add_controller(&u);
  if (!loop.start().ok()) return state.SkipWithError("loop start failed");
  for (auto _ : state) benchmark::DoNotOptimize(loop.step());
}
BENCHMARK_CAPTURE(BM_LoopTick, grpo_7b, "grpo-7b-a100")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_LoopTick, fleet_16, "fleet-16xa100")->Unit(benchmark::kMicrosecond);

std::unique_ptr<Controller> make(const std::string& kind, const PlantInfo& info) {
  Actuator gs = *resolve_actuator("auto", info);
  if (kind == "uncontrolled") return std::make_unique<UncontrolledController>();
  if (kind == "static") return std::make_unique<StaticController>(gs, 0.5);
  if (kind == "threshold") return std::make_unique<ThresholdController>(ThresholdConfig{gs});
  if (kind == "pid") {
    PidConfig c;
    c.actuator = gs;
    return std::make_unique<PidController>(c);
  }
  if (kind == "zeus") return std::make_unique<ZeusController>(ZeusConfig{});
  OracleConfig c;
  c.actuators = *resolve_actuators("all", info);
  return std::make_unique<OracleController>(c);
}

void BM_Decision(benchmark::State& state, const char* kind) {
  const sim::Scenario* s = scenario("grpo-7b-a100");
  if (!s) return state.SkipWithError("scenario not found (set FLEXWATT_SOURCE_DIR)");
  auto plant = sim::make_plant(*s, 1);
  const PlantInfo& info = plant->info();
  const BudgetUnits units = make_budget_units(info, s->budget.entries.front().budget.scope);
  SnapshotRing ring(601);
  Snapshot snap;
  double t = 0;
  for (int i = 0; i < 600; ++i, t += 0.5) {
    (void)plant->read(t, snap);
    ring.push(snap);
  }
  Observation obs;
  obs.time_s = t - 0.5;
  obs.plant = &info;
  obs.budget = &s->budget.at(obs.time_s);
  obs.units = &units;
  obs.history = &ring;
  auto c = make(kind, info);
  c->reset(info);
  if (auto* b = dynamic_cast<PlantBranching*>(c.get())) b->bind_plant(plant.get());
  SafetyLimiter lim;
  lim.reset(info, ring.at_age(ring.size() - 1));
  for (auto _ : state) {
    Command cmd = c->update(obs);
    benchmark::DoNotOptimize(lim.apply(cmd, obs));
  }
}
BENCHMARK_CAPTURE(BM_Decision, uncontrolled, "uncontrolled")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Decision, static, "static")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Decision, threshold, "threshold")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Decision, pid, "pid")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Decision, zeus, "zeus")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Decision, oracle, "oracle")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

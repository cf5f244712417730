// RL core benchmarks: deployed-policy inference per decision (target <= 5 us, issue #5) and
// one PPO update at the reference size (2048 samples x 10 epochs, 32 minibatches, 64-64
// tanh actor and critic). The environment is a stand-in with 16 observations and two
// {down, stay, up} knobs, the shape expected of the plant environment; it costs nothing.
//
// Shipped policy (policies/grpo-7b-a100.json; run from the repository root, as `make bench`
// does): BM_ShippedPolicyTrainIteration times one PPO iteration of its recorded recipe
// (metadata.recipe: envs, action mode, reward with margin, lr, epochs, minibatches, entropy
// coefficient; on the simulated scenario) and reports the whole training's wall time as
// time per iteration x metadata.iterations (counter train_total_s; target <= 300 s on 2
// cores). BM_PpoControllerDecide times one decision of the ppo controller (features +
// policy + knob command) on a simulated plant's history.

#include <benchmark/benchmark.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "control/actuator.hpp"
#include "core/rng.hpp"
#include "rl/env.hpp"
#include "rl/plant_env.hpp"
#include "rl/policy.hpp"
#include "rl/ppo_controller.hpp"
#include "rl/ppo_trainer.hpp"
#include "sim/scenario.hpp"
#include "warm_observation.hpp"

namespace {

using namespace fw;
using namespace fw::rl;

constexpr int kObsDim = 16;

class NoiseEnv : public Env {
 public:
  explicit NoiseEnv(bool gaussian) {
    obs_.names = numbered_names("o", kObsDim);
    action_ = gaussian ? ActionSpec::gaussian({"cap"}, {-1}, {1})
                       : ActionSpec::categorical({"gen_concurrency", "group_size"}, {3, 3});
  }
  const ObsSpec& obs_spec() const override { return obs_; }
  const ActionSpec& action_spec() const override { return action_; }
  Status reset(uint64_t seed, std::span<double> obs) override {
    rng_ = Rng(seed);
    t_ = 0;
    fill(obs);
    return Status::Ok();
  }
  Result<StepResult> step(std::span<const double> action, std::span<double> obs) override {
    fill(obs);
    StepResult r;
    r.reward = obs[0] + 0.1 * action[0];
    r.truncated = ++t_ >= 256;
    return r;
  }

 private:
  void fill(std::span<double> obs) {
    for (double& x : obs) x = rng_.normal();
  }
  ObsSpec obs_;
  ActionSpec action_;
  Rng rng_{0};
  int t_ = 0;
};

std::unique_ptr<PpoTrainer> make_trainer(bool gaussian) {
  std::vector<std::unique_ptr<Env>> envs;
  envs.push_back(std::make_unique<NoiseEnv>(gaussian));
  PpoConfig c;  // defaults: 2048 steps, 32 minibatches, 10 epochs, 64-64
  auto t = PpoTrainer::create(std::move(envs), c);
  if (!t.ok()) std::abort();
  return std::move(t).value();
}

void BM_PolicyInference(benchmark::State& state) {
  const bool gaussian = state.range(0) != 0;
  auto trainer = make_trainer(gaussian);
  Policy policy = trainer->policy();
  Rng rng(1);
  std::vector<std::vector<double>> obs(64, std::vector<double>(kObsDim));
  for (auto& o : obs)
    for (double& x : o) x = rng.normal();
  std::vector<double> action(policy.action_spec().dim());
  size_t i = 0;
  for (auto _ : state) {
    policy.act(obs[i++ & 63], action);
    benchmark::DoNotOptimize(action.data());
  }
  state.SetLabel(gaussian ? "gaussian 16-64-64-1" : "categorical 16-64-64-(3+3)");
}
BENCHMARK(BM_PolicyInference)->Arg(0)->Arg(1);

void BM_PpoUpdate(benchmark::State& state) {
  auto trainer = make_trainer(state.range(0) != 0);
  if (!trainer->collect().ok()) std::abort();
  for (auto _ : state) {
    IterationStats s = trainer->update();  // re-uses the same rollout each time
    benchmark::DoNotOptimize(s.approx_kl);
  }
  state.SetLabel("2048 samples x 10 epochs, 32 minibatches");
}
BENCHMARK(BM_PpoUpdate)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_PpoCollect(benchmark::State& state) {
  auto trainer = make_trainer(false);
  for (auto _ : state) {
    if (!trainer->collect().ok()) std::abort();
  }
  state.SetLabel("2048 steps, env cost ~0");
}
BENCHMARK(BM_PpoCollect)->Unit(benchmark::kMillisecond);

constexpr const char* kShippedPolicy = "policies/grpo-7b-a100.json";

void BM_ShippedPolicyTrainIteration(benchmark::State& state) {
  auto policy = Policy::load(kShippedPolicy);
  if (!policy.ok()) {
    state.SkipWithError("run from the repository root: policies/grpo-7b-a100.json not found");
    return;
  }
  const nlohmann::json& meta = policy->metadata();
  const nlohmann::json& recipe = meta["recipe"];
  // The scenario the policy was trained on, as recorded; when that path is gone (it was
  // recorded in another checkout), the repository's file of the same name.
  std::string scenario_path = recipe["scenario_path"];
  if (!std::filesystem::exists(scenario_path)) {
    scenario_path = "scenarios/" + std::filesystem::path(scenario_path).filename().string();
  }
  std::ifstream f(scenario_path);
  if (!f) {
    state.SkipWithError(("cannot open the policy's scenario " + scenario_path).c_str());
    return;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  const std::vector<std::string> base = recipe["overrides"];
  EpisodeFactory factory = [text, scenario_path, base](
                               uint64_t seed,
                               const std::vector<std::string>& ov) -> Result<PlantEpisode> {
    std::vector<std::string> all = base;
    all.insert(all.end(), ov.begin(), ov.end());
    FW_ASSIGN_OR_RETURN(sim::Scenario s, sim::parse_scenario(text, scenario_path, all));
    PlantEpisode ep;
    ep.plant = sim::make_plant(s, seed);
    ep.budget = s.budget;
    return ep;
  };
  PlantEnvConfig ec;
  ec.sample_period_s = meta.value("sample_period_s", 0.5);
  ec.decision_period_s = recipe["decision_period_s"];
  ec.episode_s = recipe["episode_s"];
  ec.budget_scale_lo = meta["randomization"]["budget_scale"][0];
  ec.budget_scale_hi = meta["randomization"]["budget_scale"][1];
  ec.violation_penalty = meta["reward"]["violation_penalty"];
  ec.excess_penalty = meta["reward"]["excess_penalty"];
  ec.churn_penalty = meta["reward"]["churn_penalty"];
  ec.token_scale = meta["reward"]["token_scale"];
  ec.penalty_margin = meta["reward"].value("penalty_margin", 0.0);
  ec.action_mode =
      recipe.value("actions", "step") == "level" ? KnobActionMode::kLevel : KnobActionMode::kStep;
  if (recipe.value("window_rule", "tumbling") == "sliding") {
    ec.window_rule = PlantEnvConfig::WindowRule::kSliding;
  }
  if (recipe.contains("knobs")) {
    auto mask = parse_knob_mask(recipe["knobs"].get<std::string>());
    if (!mask.ok()) std::abort();
    ec.knob_mask = *mask;
  }
  if (recipe.value("decide_on", "period") == "phase") {
    ec.decide_on = DecideOn::kPhase;
    ec.max_decision_period_s = recipe.value("max_decision_period_s", 60.0);
  }
  for (const auto& r : meta["randomization"]["ranges"]) {
    const std::string key = r["key"];
    ec.ranges.push_back({key, r["lo"], r["hi"],
                         key.find("group_size") != std::string::npos ||
                             key.find("gen_concurrency") != std::string::npos});
  }
  std::vector<std::unique_ptr<Env>> envs;
  const int n_env = recipe["envs"];
  for (int e = 0; e < n_env; ++e) {
    auto env = PlantEnv::create(factory, ec);
    if (!env.ok()) {
      state.SkipWithError(env.status().message().c_str());
      return;
    }
    envs.push_back(std::move(env).value());
  }
  PpoConfig pc;
  pc.hidden = {64, 64};
  pc.adam.lr = recipe["lr"];
  pc.update_epochs = recipe["epochs"];
  pc.loss.ent_coef = recipe.value("ent_coef", 0.01);
  pc.num_steps = PlantEnv::rollout_steps(ec);
  pc.num_minibatches = recipe.value("minibatches", 4);
  while (pc.num_minibatches > 1 && (pc.num_steps * n_env) % pc.num_minibatches != 0)
    --pc.num_minibatches;
  auto trainer = PpoTrainer::create(std::move(envs), pc);
  if (!trainer.ok()) std::abort();
  for (auto _ : state) {
    auto st = (*trainer)->iterate();
    if (!st.ok()) std::abort();
    benchmark::DoNotOptimize(st->approx_kl);
  }
  const int iterations = meta["iterations"];
  state.counters["iterations"] = iterations;
  state.counters["train_total_s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) / iterations,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);  // elapsed / iter x iterations
  state.SetLabel("one iteration of the shipped recipe; train_total_s = x iterations");
}
BENCHMARK(BM_ShippedPolicyTrainIteration)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0)
    ->UseRealTime();

void BM_PpoControllerDecide(benchmark::State& state) {
  auto policy = Policy::load(kShippedPolicy);
  auto scenario = sim::load_scenario("scenarios/grpo-7b-a100.yaml", {});
  if (!policy.ok() || !scenario.ok()) {
    state.SkipWithError("run from the repository root (policy or scenario not found)");
    return;
  }
  auto ctrl = PpoController::create(*policy);
  if (!ctrl.ok()) std::abort();
  auto warm = bench::warm_observation(*scenario, BudgetScope::kGpu, 601, 700);
  (*ctrl)->reset(warm->plant->info());
  const Observation& obs = warm->obs;
  for (auto _ : state) {
    const Command& c = (*ctrl)->decide(obs);
    benchmark::DoNotOptimize(c.knobs.data());
  }
  std::string label = "features (300 s history) + 20-64-64-(";
  const std::vector<int>& cats = policy->action_spec().categories;
  for (size_t i = 0; i < cats.size(); ++i) label += (i ? "+" : "") + std::to_string(cats[i]);
  state.SetLabel(label + ") shipped policy + knob command");
}
BENCHMARK(BM_PpoControllerDecide);

}  // namespace

BENCHMARK_MAIN();

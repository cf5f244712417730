// RL core benchmarks: deployed-policy inference per decision (target <= 5 us, issue #5) and
// one PPO update at the reference size (2048 samples x 10 epochs, 32 minibatches, 64-64
// tanh actor and critic). The environment is a stand-in with 16 observations and two
// {down, stay, up} knobs, the shape expected of the plant environment; it costs nothing.

#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "core/rng.hpp"
#include "rl/env.hpp"
#include "rl/policy.hpp"
#include "rl/ppo_trainer.hpp"

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

}  // namespace

BENCHMARK_MAIN();

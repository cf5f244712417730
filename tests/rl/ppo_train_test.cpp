#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "rl/ppo_trainer.hpp"
#include "toy_envs.hpp"

namespace fw::rl {
namespace {

using testing::make_envs;
using testing::TargetReach;

// Mean return over `episodes` evaluation episodes (seeds 1000.., never used in training,
// whose reset seeds come from the ppo.env stream) of an action rule.
template <typename ActFn>
double evaluate(int dims, bool gaussian, int episodes, ActFn&& act) {
  TargetReach env(dims, gaussian);
  std::vector<double> obs(2 * dims), action(dims);
  double total = 0;
  for (int ep = 0; ep < episodes; ++ep) {
    EXPECT_TRUE(env.reset(1000 + ep, obs).ok());
    for (;;) {
      act(obs, action);
      auto r = env.step(action, obs);
      total += r->reward;
      if (r->done()) break;
    }
  }
  return total / episodes;
}

double random_return(int dims, bool gaussian) {
  Rng rng(77);
  return evaluate(dims, gaussian, 200, [&](const auto&, auto& a) {
    for (double& x : a) x = gaussian ? rng.uniform(-1, 1) : static_cast<double>(rng.below(3));
  });
}

// Hand-written optimum: full speed towards the target, stop when within a step.
double oracle_return(int dims, bool gaussian) {
  return evaluate(dims, gaussian, 200, [&](const auto& o, auto& a) {
    for (int i = 0; i < dims; ++i) {
      const double gap = o[dims + i] - o[i];
      if (gaussian) {
        a[i] = std::clamp(gap / 0.1, -1.0, 1.0);
      } else {
        a[i] = std::abs(gap) < 0.05 ? 1.0 : (gap > 0 ? 2.0 : 0.0);
      }
    }
  });
}

PpoConfig small_config(uint64_t seed) {
  PpoConfig c;
  c.seed = seed;
  c.num_steps = 80;  // 4 episodes of 20 per environment
  c.num_minibatches = 8;
  c.update_epochs = 4;
  c.adam.lr = 1e-3;
  return c;
}

// Trains and returns the deterministic policy's evaluation return.
double train_and_evaluate(int dims, bool gaussian, int iterations, uint64_t seed) {
  PpoConfig c = small_config(seed);
  c.anneal_iterations = iterations;
  auto trainer = PpoTrainer::create(make_envs(8, dims, gaussian), c);
  EXPECT_TRUE(trainer.ok()) << trainer.status().message();
  for (int k = 0; k < iterations; ++k) {
    auto s = (*trainer)->iterate();
    EXPECT_TRUE(s.ok());
    EXPECT_TRUE(std::isfinite(s->approx_kl));
  }
  Policy p = (*trainer)->policy();
  return evaluate(dims, gaussian, 200, [&](const auto& o, auto& a) { p.act(o, a); });
}

// Learning test: the trained policy must close at least half of the gap between a
// uniformly random policy and the hand-written optimum, on unseen episodes.
TEST(PpoTrainer, LearnsDiscreteTargetReaching) {
  const double random = random_return(2, false), oracle = oracle_return(2, false);
  const double trained = train_and_evaluate(2, false, 30, 1);
  std::printf("discrete: random %.3f trained %.3f oracle %.3f\n", random, trained, oracle);
  EXPECT_GT(trained, random + 0.5 * (oracle - random))
      << "random " << random << " trained " << trained << " oracle " << oracle;
}

TEST(PpoTrainer, LearnsGaussianTargetReaching) {
  const double random = random_return(1, true), oracle = oracle_return(1, true);
  const double trained = train_and_evaluate(1, true, 30, 2);
  std::printf("gaussian: random %.3f trained %.3f oracle %.3f\n", random, trained, oracle);
  EXPECT_GT(trained, random + 0.5 * (oracle - random))
      << "random " << random << " trained " << trained << " oracle " << oracle;
}

TEST(PpoTrainer, BitForBitDeterministicForASeed) {
  auto run = [](uint64_t seed) {
    auto t = PpoTrainer::create(make_envs(2, 2, true), small_config(seed));
    std::vector<IterationStats> stats;
    for (int k = 0; k < 3; ++k) stats.push_back(*(*t)->iterate());
    return std::make_pair((*t)->theta(), stats);
  };
  const auto [theta_a, stats_a] = run(3);
  const auto [theta_b, stats_b] = run(3);
  const auto [theta_c, stats_c] = run(4);
  EXPECT_EQ(theta_a, theta_b);  // exact equality, every parameter
  for (size_t k = 0; k < stats_a.size(); ++k) {
    EXPECT_EQ(stats_a[k].approx_kl, stats_b[k].approx_kl);
    EXPECT_EQ(stats_a[k].mean_return, stats_b[k].mean_return);
  }
  EXPECT_NE(theta_a, theta_c);
}

TEST(PpoTrainer, CheckpointResumesExactlyAtEpisodeBoundaries) {
  const PpoConfig c = small_config(5);  // num_steps 80 = 4 whole episodes
  auto straight = PpoTrainer::create(make_envs(2, 1, false), c);
  for (int k = 0; k < 4; ++k) ASSERT_TRUE((*straight)->iterate().ok());

  auto first = PpoTrainer::create(make_envs(2, 1, false), c);
  for (int k = 0; k < 2; ++k) ASSERT_TRUE((*first)->iterate().ok());
  const std::string saved = (*first)->checkpoint().dump();
  auto resumed = PpoTrainer::create(make_envs(2, 1, false), c);
  ASSERT_TRUE((*resumed)->restore(nlohmann::json::parse(saved)).ok());
  for (int k = 0; k < 2; ++k) ASSERT_TRUE((*resumed)->iterate().ok());
  EXPECT_EQ((*resumed)->theta(), (*straight)->theta());
  EXPECT_EQ((*resumed)->total_steps(), (*straight)->total_steps());
  EXPECT_EQ((*resumed)->iteration(), 4);
}

TEST(PpoTrainer, ReportsUpdateStatistics) {
  PpoConfig c = small_config(6);
  c.target_kl = 1e-9;  // stops after the first epoch
  auto t = PpoTrainer::create(make_envs(2, 1, false), c);
  auto s = (*t)->iterate();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->epochs, 1);
  EXPECT_GT(s->approx_kl, 0.0);
  EXPECT_GE(s->clip_frac, 0.0);
  EXPECT_NEAR(s->entropy, std::log(3.0), 0.05);  // near-uniform at init (output gain 0.01)
  EXPECT_EQ(s->episodes, 2 * 4);
  EXPECT_EQ(s->total_steps, 2 * 80);
  EXPECT_TRUE(std::isfinite(s->explained_variance));
}

TEST(PpoTrainer, RejectsBadConfiguration) {
  PpoConfig c = small_config(7);
  c.num_minibatches = 7;  // does not divide 2 * 80
  auto t = PpoTrainer::create(make_envs(2, 1, false), c);
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), 2);
  EXPECT_FALSE(PpoTrainer::create({}, small_config(7)).ok());
  std::vector<std::unique_ptr<Env>> mixed;
  mixed.push_back(std::make_unique<TargetReach>(1, false));
  mixed.push_back(std::make_unique<TargetReach>(1, true));
  EXPECT_FALSE(PpoTrainer::create(std::move(mixed), small_config(7)).ok());
}

}  // namespace
}  // namespace fw::rl

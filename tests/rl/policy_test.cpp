#include "rl/policy.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "../alloc_counter.hpp"  // g_count_allocs, g_allocs
#include "core/version.hpp"
#include "rl/ppo_trainer.hpp"
#include "toy_envs.hpp"

namespace fw::rl {
namespace {

Policy make_policy(bool gaussian, uint64_t seed) {
  PpoConfig c;
  c.seed = seed;
  c.hidden = {16, 16};
  c.num_steps = 20;
  c.num_minibatches = 2;
  c.update_epochs = 1;
  auto trainer = PpoTrainer::create(testing::make_envs(2, 2, gaussian), c);
  EXPECT_TRUE(trainer.ok());
  EXPECT_TRUE((*trainer)->iterate().ok());  // non-trivial normaliser statistics and weights
  return (*trainer)->policy({{"scenario_family", "toy"}});
}

std::vector<std::array<double, 4>> random_obs(int n) {
  Rng rng(99);
  std::vector<std::array<double, 4>> v(n);
  for (auto& o : v)
    for (double& x : o) x = rng.uniform(-2, 2);
  return v;
}

TEST(Policy, JsonRoundTripGivesIdenticalActions) {
  for (bool gaussian : {false, true}) {
    Policy p = make_policy(gaussian, 5);
    const std::string text = p.to_json().dump(1);
    auto back = Policy::from_json(nlohmann::json::parse(text));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(back->to_json(), p.to_json());
    EXPECT_EQ(back->theta(), p.theta());
    for (const auto& o : random_obs(50)) {
      double a[2], b[2];
      p.act(o, a);
      back->act(o, b);
      EXPECT_EQ(a[0], b[0]);
      EXPECT_EQ(a[1], b[1]);
    }
  }
}

TEST(Policy, CarriesSpecsMetadataAndVersion) {
  Policy p = make_policy(false, 6);
  const nlohmann::json j = p.to_json();
  EXPECT_EQ(j["format"], "flexwatt-policy");
  EXPECT_EQ(j["flexwatt_version"], kVersion);
  EXPECT_EQ(j["metadata"]["scenario_family"], "toy");
  EXPECT_EQ(j["metadata"]["training_seed"], 6);
  EXPECT_EQ(j["observation"]["names"].size(), 4u);
  EXPECT_EQ(j["observation"]["normalizer"]["count"], 2 * 20 + 2 + 2);  // resets + steps
  EXPECT_EQ(j["action"]["kind"], "categorical");
  EXPECT_EQ(j["action"]["categories"], nlohmann::json({3, 3}));
  EXPECT_FALSE(j.contains("log_std"));
  EXPECT_TRUE(make_policy(true, 6).to_json().contains("log_std"));
}

TEST(Policy, SaveAndLoadFile) {
  Policy p = make_policy(true, 7);
  const auto path = std::filesystem::temp_directory_path() / "fw_rl_policy_test.json";
  ASSERT_TRUE(p.save(path.string()).ok());
  auto back = Policy::load(path.string());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), p.to_json());
  std::filesystem::remove(path);
  auto missing = Policy::load(path.string());
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().exit_code(), 2);
}

TEST(Policy, RejectsInconsistentFilesNamingTheField) {
  const nlohmann::json good = make_policy(false, 8).to_json();
  auto expect_error = [](nlohmann::json j, const std::string& field) {
    auto r = Policy::from_json(j);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().exit_code(), 2);
  };
  nlohmann::json j = good;
  j["actor"]["params"].erase(0);
  expect_error(j, "actor.params");
  j = good;
  j["actor"]["layers"][0] = 5;
  expect_error(j, "actor.layers");
  j = good;
  j["action"]["categories"] = {3, 4};
  expect_error(j, "actor.layers");
  j = good;
  j["format"] = "something-else";
  expect_error(j, "format");
  j = good;
  j["format_version"] = 99;
  expect_error(j, "format_version");
  j["format_version"] = 1;  // phase-revealing observation: refused, with the way out
  expect_error(j, "retrain");
  j = good;
  j["observation"]["normalizer"]["mean"].erase(0);
  expect_error(j, "normalizer");
  j = good;
  j["action"]["kind"] = "beta";
  expect_error(j, "action.kind");
  // Found by fuzz_policy: non-integer or huge numbers where integers are expected (their
  // conversion to int was undefined behaviour), and layer sizes that would allocate a huge
  // network before the parameter count is checked.
  j = good;
  j["actor"]["layers"][1] = -1.1e104;
  expect_error(j, "actor.layers");
  j = good;
  j["actor"]["layers"][1] = 16.5;
  expect_error(j, "actor.layers");
  j = good;
  j["actor"]["layers"][1] = 65536;
  expect_error(j, "actor.params: expected");
  j = good;
  j["format_version"] = 1e300;
  expect_error(j, "format_version");
  j = good;
  j["action"]["kind"] = "categorical";
  j["action"]["categories"] = {3.5};
  expect_error(j, "action.categories");
}

TEST(Policy, InferenceAllocatesNothing) {
  for (bool gaussian : {false, true}) {
    Policy p = make_policy(gaussian, 9);
    const auto obs = random_obs(10);
    double a[2];
    Rng rng(1);
    p.act(obs[0], a);  // warm-up (nothing should be lazy, but be fair)
    g_allocs = 0;
    g_count_allocs = true;
    for (const auto& o : obs) {
      p.act(o, a);
      p.sample(o, rng, a);
    }
    g_count_allocs = false;
    EXPECT_EQ(g_allocs, 0) << (gaussian ? "gaussian" : "categorical");
  }
  // The counter works: a vector allocates.
  g_allocs = 0;
  g_count_allocs = true;
  std::vector<double>* v = new std::vector<double>(100);
  g_count_allocs = false;
  delete v;
  EXPECT_GE(g_allocs, 1);
}

}  // namespace
}  // namespace fw::rl

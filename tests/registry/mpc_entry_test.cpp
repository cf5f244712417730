// The mpc entry and its twin (registry/mpc_entry.hpp, grpo_twin.hpp): the twin
// never carries the declared scenario's completion-length curves, refits only from what it
// observed, and the entry is refused where no declared scenario exists.

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "registry/controller_registry.hpp"
#include "registry/grpo_twin.hpp"
#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::registry {
namespace {

sim::Scenario drift() {
  auto s = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100-drift.yaml", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : sim::Scenario{};
}

TEST(GrpoTwin, ScenarioDropsTheCurvesAndTakesTheFittedMedian) {
  const sim::Scenario s = drift();
  ASSERT_FALSE(s.jobs[0].grpo.completion_len_curve.empty());
  const sim::Scenario t = twin_scenario(s, {});
  EXPECT_TRUE(t.jobs[0].grpo.completion_len_curve.empty());
  EXPECT_DOUBLE_EQ(t.jobs[0].grpo.completion_median_tokens, 160);  // as declared
  EXPECT_DOUBLE_EQ(t.jobs[0].grpo.curve_shift_s, 0);
  EXPECT_DOUBLE_EQ(twin_scenario(s, {231.5}).jobs[0].grpo.completion_median_tokens, 231.5);
}

// Stragglers and pauses are the future too (unannounced): the twin carries neither.
TEST(GrpoTwin, ScenarioDropsStragglersAndPauses) {
  sim::Scenario s = drift();
  s.jobs[0].grpo.stragglers.push_back({2.0, 100, 200});
  sim::GrpoParams::Pause z;
  z.start_s = 0;
  z.end_s = 1000;
  z.every_s = 60;
  z.length_s = 30;
  s.jobs[0].grpo.pauses.push_back(z);
  const sim::Scenario t = twin_scenario(s, {});
  EXPECT_TRUE(t.jobs[0].grpo.stragglers.empty());
  EXPECT_TRUE(t.jobs[0].grpo.pauses.empty());
}

// With churn the twin carries the jobs running at its refit, from its start and for good;
// jobs not arrived yet or gone never start in it (no knowledge of the schedule ahead).
TEST(GrpoTwin, ScenarioHoldsTheJobsRunningNow) {
  auto s = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/fleet-16xa100-churn.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto present = [](const sim::Scenario& t) {
    std::string out;
    for (const sim::JobSpec& j : t.jobs) {
      EXPECT_TRUE(std::isinf(j.end_s)) << j.name;
      out += j.start_s == 0 ? '1' : (j.start_s > 1e9 ? '0' : '?');
    }
    return out;
  };
  // jobs: 72b-a (leaves 7200), 72b-b (arrives 3600), 14b-a (leaves 5400), 14b-b, 7b-a (leaves
  // 9000), 7b-b, 7b-c (arrives 1800), 7b-d (arrives 7200)
  EXPECT_EQ(present(twin_scenario(*s, {}, 0)), "10111100");
  EXPECT_EQ(present(twin_scenario(*s, {}, 4000)), "11111110");
  EXPECT_EQ(present(twin_scenario(*s, {}, 7200)), "01011111");
  EXPECT_EQ(present(twin_scenario(*s, {}, 9500)), "01010111");
}

TEST(GrpoTwin, RefitsOnlyFromWhatItObserved) {
  auto s = std::make_shared<const sim::Scenario>(drift());
  sim::OnlineFitConfig fc;
  fc.window_s = 900;
  GrpoTwin twin(s, fc);
  EXPECT_FALSE(twin.refit(0).ok());  // nothing observed
  auto plant = sim::make_plant(*s, 500001);
  Snapshot snap;
  for (int k = 1; k <= 2 * 3000; ++k) {
    ASSERT_TRUE(plant->read(0.5 * k, snap).ok());
    twin.observe(snap);
  }
  auto fit = twin.refit(3000);
  ASSERT_TRUE(fit.ok()) << fit.status().message();
  const auto& job = fit->figures["jobs"][0];
  EXPECT_TRUE(job["fitted"].get<bool>());
  // The curve is at x1.5 at 3000 s (x1.43 at the window's middle): the fit sees longer
  // completions than declared.
  EXPECT_GT(job["median_tokens"].get<double>(), 1.25 * 160);
  ASSERT_NE(fit->plants(1), nullptr);
  twin.reset();
  EXPECT_FALSE(twin.refit(3000).ok());  // a new episode forgets
}

ControllerEnv env_of(const sim::Scenario& s, bool declared) {
  ControllerEnv env;
  env.info = sim::make_plant(s, 1)->info();
  env.budget = s.budget;
  env.sample_period_s = s.sample_period_s;
  env.duration_s = 600;
  env.calibration_seeds = {1000001};
  if (declared) env.declared = std::make_shared<const sim::Scenario>(s);
  return env;
}

TEST(MpcEntry, PreparesOnTheDeclaredTwinAndIsRefusedWithoutOne) {
  const sim::Scenario s = drift();
  auto spec = parse_controller_spec("mpc:horizon_s=120,grid=3");
  ASSERT_TRUE(spec.ok());
  auto refused = prepare_controller(*spec, env_of(s, false));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("declared scenario"), std::string::npos);
  auto p = prepare_controller(*spec, env_of(s, true));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->notes["planning"]["node_time_s"].get<double>(), 0);
  EXPECT_GT(p->notes["planning"]["initial_twin_episodes"].get<int>(), 0);
  auto c = p->make(1);
  c->reset(env_of(s, true).info);
  EXPECT_EQ(c->name(), "mpc");
  EXPECT_DOUBLE_EQ(c->period_s(), 0.5);
  EXPECT_TRUE(c->claims().test(kCapActuator));
}

}  // namespace
}  // namespace fw::registry

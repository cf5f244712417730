// The per-GPU cap study: score normalisation, the frontier, the arms and capnet on the
// simulator, capnet's features, and the caps training's determinism (docs/caps.md).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../alloc_counter.hpp"  // g_count_allocs, g_allocs
#include "control/control_loop.hpp"
#include "controllers/cap_arms.hpp"
#include "core/version.hpp"
#include "eval/cap_episode.hpp"
#include "rl/cap_features.hpp"
#include "rl/capnet_controller.hpp"
#include "rl_train/cap_training.hpp"
#include "sim/scenario.hpp"
#include "studies/cap_compare.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::studies {
namespace {

sim::Scenario scenario(const std::string& file, std::vector<std::string> sets = {}) {
  auto s = sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/" + file, sets);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return *s;
}

// A capnet policy whose action is the constant `bias` (zero weights).
rl::Policy constant_policy(double bias) {
  const rl::Mlp mlp({rl::kCapObsDim, 4, 1});
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(mlp.num_params() + 1);
  theta[mlp.num_params() - 1] = bias;  // the output layer's bias is the last actor value
  return rl::Policy(rl::cap_obs_spec(), rl::cap_action_spec(), mlp, theta,
                    rl::ObsNormalizer(rl::kCapObsDim), {{"decision_period_s", 10.0}}, kVersion);
}

TEST(CapScore, NormalisesPerTokenAgainstTheUncappedRun) {
  const eval::CapEpisode base{1000.0, 100.0, 600};
  const eval::CapEpisode run{720.0, 90.0, 600};  // 8 J/token vs 10
  const eval::CapScore s = eval::score_against(run, base);
  EXPECT_NEAR(s.energy_saved, 0.2, 1e-12);
  EXPECT_NEAR(s.throughput_lost, 0.1, 1e-12);
  EXPECT_NEAR(s.edp_change, 0.8 / 0.9 - 1, 1e-12);
  EXPECT_NEAR(s.reward(0.5), 0.2 - 0.05, 1e-12);
  EXPECT_NEAR(eval::score_against(base, base).energy_saved, 0.0, 1e-12);
}

TEST(CapFrontier, BestBelowOrInterpolated) {
  std::vector<CapArmResult> arms(3);
  arms[0] = {.name = "a", .family = "uniform", .energy_saved = 0.02, .throughput_lost = 0.04};
  arms[1] = {.name = "b", .family = "uniform", .energy_saved = 0.06, .throughput_lost = 0.10};
  arms[2] = {.name = "c", .family = "per-gpu", .energy_saved = 0.50, .throughput_lost = 0.01};
  EXPECT_NEAR(frontier_at(arms, "uniform", 0.04), 0.024, 1e-12);  // a lies below the chord
  // The concave envelope: the chord from uncapped to b lies above a.
  EXPECT_NEAR(frontier_at(arms, "uniform", 0.07), 0.042, 1e-12);
  EXPECT_NEAR(frontier_at(arms, "uniform", 0.02), 0.012, 1e-12);
  EXPECT_NEAR(frontier_at(arms, "uniform", 0.20), 0.06, 1e-12);
  EXPECT_NEAR(frontier_at(arms, "per-gpu", 0.005), 0.25, 1e-12);
  // The best arm within a loss: c within 1.2 %; none within 0.5 % (index 0).
  EXPECT_EQ(best_within_loss(arms, 0.012), 2u);
  EXPECT_EQ(best_within_loss(arms, 0.05), 2u);
  arms[2].throughput_lost = 0.2;
  EXPECT_EQ(best_within_loss(arms, 0.05), 0u);  // a: 2 % saved at 4 % lost
  EXPECT_EQ(best_within_loss(arms, 0.10), 1u);  // b saves more than a
  arms[0].throughput_lost = 0.3;
  EXPECT_EQ(best_within_loss(arms, 0.05), 0u);  // none qualifies: index 0
  EXPECT_EQ(best_within_loss({}, 0.05), 0u);
}

TEST(CapNet, ConstantDownActionLowersBusyGpuCapsOneStepPerDecision) {
  sim::Scenario s = scenario("caps-pretrain-a100x8.yaml", {"duration_s=100"});
  auto c = rl::CapNetController::create(constant_policy(-5.0));
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE((*c)->claims().test(kCapActuator));
  EXPECT_EQ((*c)->period_s(), 10);
  auto plant = sim::make_plant(s, 1);
  ControlLoop loop(*plant, s.budget, LoopConfig{.sample_period_s = 0.5, .duration_s = 100});
  loop.add_controller(c->get());
  ASSERT_TRUE(loop.run().ok());
  Snapshot snap;
  ASSERT_TRUE(plant->read(100, snap).ok());
  // The job starts at 10 s: decisions at 10 (no busy sample yet: the job's first samples
  // are idle), then 20 … 90 s at most, each −20 W (0.05 × 400 W), clamped by a = −1.
  for (const GpuReading& g : snap.gpus) {
    EXPECT_LT(g.cap_w, 400 - 20 * 6 + 1e-9);
    EXPECT_GE(g.cap_w, 400 - 20 * 9 - 1e-9);
    EXPECT_EQ(std::fmod(400 - g.cap_w, 20.0), 0.0);
  }
}

TEST(CapNet, DecideAllocatesNothing) {
  sim::Scenario s = scenario("caps-pipeline-imbalance-a100x8.yaml", {"jobs.0.duty={every_s: 0}"});
  auto c = rl::CapNetController::create(constant_policy(-0.3));
  ASSERT_TRUE(c.ok());
  auto plant = sim::make_plant(s, 1);
  (*c)->reset(plant->info());
  SnapshotRing ring(61);
  Snapshot snap;
  for (int k = 1; k <= 120; ++k) {
    ASSERT_TRUE(plant->read(0.5 * k, snap).ok());
    snap.time_s = 0.5 * k;
    ring.push(snap);
  }
  Observation obs;
  obs.time_s = 60;
  obs.plant = &plant->info();
  obs.history = &ring;
  (*c)->decide(obs);
  g_allocs = 0;
  g_count_allocs = true;
  double sum = 0;
  for (int k = 0; k < 3; ++k) sum += (*c)->decide(obs).power_cap_w[0];
  g_count_allocs = false;
  EXPECT_EQ(g_allocs, 0);
  EXPECT_LT(sum, 3 * 400.0);  // it did lower the cap request
}

TEST(CapNet, ConstantUpActionKeepsTheMaximumCap) {
  sim::Scenario s = scenario("caps-pretrain-a100x1.yaml", {"duration_s=60"});
  auto c = rl::CapNetController::create(constant_policy(3.0));
  ASSERT_TRUE(c.ok());
  auto r = eval::run_cap_episode(s, 1, c->get());
  auto u = eval::run_cap_episode(s, 1, nullptr);
  ASSERT_TRUE(r.ok() && u.ok());
  EXPECT_EQ(r->energy_j, u->energy_j);
  EXPECT_EQ(r->tokens, u->tokens);
}

TEST(CapNet, RejectsAPolicyOfAnotherShape) {
  rl::Policy p = constant_policy(0);
  nlohmann::json j = p.to_json();
  j["observation"]["names"][4] = "window_elapsed";
  auto q = rl::Policy::from_json(j);
  ASSERT_TRUE(q.ok()) << q.status().message();
  auto c = rl::CapNetController::create(*q);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("window_elapsed"), std::string::npos);
}

TEST(CapFeatures, ClockGapIsZeroForTheSlowestGpuAndPositiveForLighterOnes) {
  // Under one uniform cap, lightly loaded GPUs (imbalance 0.4) run at higher clocks.
  sim::Scenario s =
      scenario("caps-moe-imbalance-a100x8.yaml", {"duration_s=60", "jobs.0.duty={every_s: 0}"});
  // The last 20 s of history in a ring, as the stepper keeps it.
  SnapshotRing ring(40);
  auto p2 = sim::make_plant(s, 3);
  Command c;
  c.power_cap_w.assign(8, 250);
  ASSERT_TRUE(p2->write(c).ok());
  Snapshot snap;
  for (int k = 1; k <= 120; ++k) {
    ASSERT_TRUE(p2->read(0.5 * k, snap).ok());
    snap.time_s = 0.5 * k;
    ring.push(snap);
  }
  Observation obs;
  obs.time_s = 60;
  obs.plant = &p2->info();
  obs.history = &ring;
  rl::CapFeatureState st;
  st.reset(p2->info());
  std::vector<double> f(8 * rl::kCapObsDim);
  std::vector<uint8_t> busy(8);
  rl::build_cap_features(obs, 10, st, f.data(), busy.data());
  double min_gap = 1, max_gap = 0;
  for (int g = 0; g < 8; ++g) {
    ASSERT_EQ(busy[g], 1);
    const double* o = f.data() + g * rl::kCapObsDim;
    EXPECT_NEAR(o[1], 250.0 / 400.0, 1e-9);  // cap_rel_tdp
    EXPECT_GT(o[0], 0.2);
    EXPECT_LE(o[0], 0.7);
    min_gap = std::min(min_gap, o[4]);
    max_gap = std::max(max_gap, o[4]);
  }
  EXPECT_EQ(min_gap, 0.0);
  EXPECT_GT(max_gap, 0.02);
}

TEST(PerGpuStatic, CapsTheLightestGpuLowest) {
  sim::Scenario s = scenario("caps-pipeline-imbalance-a100x8.yaml", {"duration_s=120"});
  PerGpuStaticController c(0.8);
  auto plant = sim::make_plant(s, 2);
  ControlLoop loop(*plant, s.budget, LoopConfig{.sample_period_s = 0.5, .duration_s = 120});
  loop.add_controller(&c);
  ASSERT_TRUE(loop.run().ok());
  Snapshot snap;
  ASSERT_TRUE(plant->read(120, snap).ok());
  double lo = 1e9, hi = 0;
  for (const GpuReading& g : snap.gpus) {
    lo = std::min(lo, g.cap_w);
    hi = std::max(hi, g.cap_w);
  }
  EXPECT_LT(hi, 400);
  EXPECT_GT(hi - lo, 10);  // imbalance 0.3: the caps differ by GPU
}

TEST(CapTraining, DeterministicForASeedWhateverTheThreads) {
  const std::string dir = std::string(FLEXWATT_BINARY_DIR) + "/cap_training_test";
  std::filesystem::create_directories(dir);
  rl::CapTrainRequest r;
  r.scenario_path = std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml";
  r.iterations = 2;
  r.pairs = 2;
  r.variants = 1;
  r.episode_s = 60;
  r.max_gpus = 2;
  r.validate_every = 1;
  r.validation_seeds = 1;
  r.hidden = {4};
  std::string text[2];
  for (int t = 0; t < 2; ++t) {
    r.threads = t + 1;
    r.out = dir + "/p" + std::to_string(t) + ".json";
    auto s = rl::run_cap_training(r, {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->iterations, 2);
    std::ifstream in(r.out);
    text[t] = std::string(std::istreambuf_iterator<char>(in), {});
    auto p = rl::Policy::load(r.out);
    ASSERT_TRUE(p.ok());
    EXPECT_TRUE(rl::CapNetController::create(*p).ok());
    EXPECT_EQ(p->metadata().value("alpha", 0.0), 1.0);
  }
  EXPECT_EQ(text[0], text[1]);
}

}  // namespace
}  // namespace fw::studies

#include "rl/plant_env.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <span>
#include <vector>

#include "control/observation.hpp"
#include "control/window_judge.hpp"
#include "rl/plant_features.hpp"
#include "scripted_plant.hpp"

namespace fw::rl {
namespace {

using testing::gpu_budget;
using testing::ScriptedPlant;

// An observation over a hand-made history: power_w[i] read at t = i·0.5 s.
struct HandHistory {
  PlantInfo info = ScriptedPlant().info();
  BudgetSchedule budget = gpu_budget(300, 30);
  BudgetUnits units = make_budget_units(info, BudgetScope::kGpu);
  SnapshotRing ring{601};

  void push(double t_s, double power_w, double tokens, double steps, Phase phase, double conc = 16,
            double group = 8) {
    Snapshot s;
    s.time_s = t_s;
    s.gpus = {GpuReading{}};
    s.gpus[0].power_w = power_w;
    s.jobs = {JobReading{}};
    s.jobs[0].phase = phase;
    s.jobs[0].tokens_total = tokens;
    s.jobs[0].steps_total = steps;
    s.jobs[0].knobs = {conc, group};
    ring.push(s);
  }
  Observation obs(double t_s) const {
    Observation o;
    o.time_s = t_s;
    o.sample_period_s = 0.5;
    o.plant = &info;
    o.budget = &budget.entries[0].budget;
    o.units = &units;
    o.history = &ring;
    return o;
  }
};

TEST(PlantFeatures, HandMadeHistoryGivesExpectedValues) {
  HandHistory h;
  // 40 s of samples: 330 W for t < 35 s, then 240 W; 20 tokens per sample (40 tok/s); a
  // training step completes at t = 12 s and at t = 32 s.
  for (int i = 0; i <= 80; ++i) {
    const double t = 0.5 * i;
    h.push(t, t < 35 ? 330 : 240, 20.0 * i, t >= 32 ? 2 : (t >= 12 ? 1 : 0), Phase::kUpdate);
  }
  std::array<double, kPlantObsDim> f{};
  build_plant_features(h.obs(40), 0, f);
  const auto& names = plant_obs_spec().names;
  auto at = [&](const char* name) {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return f[i];
    }
    ADD_FAILURE() << name;
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(at("power_0.5s_rel"), 0.8);
  // 10 s span: samples at t in (30, 40] = 20 samples, 9 at 330 W (30.5..34.5), 11 at 240 W.
  EXPECT_NEAR(at("power_10s_rel"), (9 * 330.0 + 11 * 240.0) / 20 / 300, 1e-12);
  // 30 s span: t in (10, 40]: 60 samples, 49 at 330 W.
  EXPECT_NEAR(at("power_30s_rel"), (49 * 330.0 + 11 * 240.0) / 60 / 300, 1e-12);
  EXPECT_NEAR(at("power_window_rel"), at("power_30s_rel"), 1e-12);
  // 120 s span: all 81 samples.
  EXPECT_NEAR(at("power_120s_rel"), (70 * 330.0 + 11 * 240.0) / 81 / 300, 1e-12);
  EXPECT_DOUBLE_EQ(at("power_peak_60s_rel"), 1.1);
  const double m10 = (9 * 330.0 + 11 * 240.0) / 20;
  const double var10 = (9 * 330.0 * 330 + 11 * 240.0 * 240) / 20 - m10 * m10;
  EXPECT_NEAR(at("power_sd_10s_rel"), std::sqrt(var10) / 300, 1e-9);
  // Trailing 30 s window: the 30 s span's peak and sd.
  EXPECT_DOUBLE_EQ(at("power_window_peak_rel"), 1.1);
  const double m30 = (49 * 330.0 + 11 * 240.0) / 60;
  const double var30 = (49 * 330.0 * 330 + 11 * 240.0 * 240) / 60 - m30 * m30;
  EXPECT_NEAR(at("power_window_sd_rel"), std::sqrt(var30) / 300, 1e-9);
  // Allowance over the next 10 s: the head of the trailing window, t in (20, 40], is 40
  // samples (29 at 330 W), which stay in the window 10 s from now.
  const double head = (29 * 330.0 + 11 * 240.0) / 40 / 300;
  EXPECT_NEAR(at("trailing_allowance_rel"), (30 - 20 * head) / 10, 1e-12);
  EXPECT_DOUBLE_EQ(at("gen_concurrency_frac"), 15.0 / 63);
  EXPECT_DOUBLE_EQ(at("group_size_frac"), 7.0 / 15);
  EXPECT_EQ(at("phase_update"), 1);
  EXPECT_EQ(at("phase_generate") + at("phase_score") + at("phase_sync") + at("phase_other"), 0);
  EXPECT_NEAR(at("step_elapsed_min"), 8.0 / 60, 1e-12);
  EXPECT_NEAR(at("last_step_min"), 20.0 / 60, 1e-12);
  EXPECT_NEAR(at("token_rate_30s_hundreds"), 40.0 / 100, 1e-12);

  // Deterministic: the same readings give the same bits.
  std::array<double, kPlantObsDim> g{};
  build_plant_features(h.obs(40), 0, g);
  EXPECT_EQ(f, g);
}

// Meter-blind: the same readings shifted in time by a part of the budget window (so a
// meter's windows aligned to t = 0 fall elsewhere in them) give the same observation.
TEST(PlantFeatures, RevealNoWindowPhase) {
  std::array<double, kPlantObsDim> f0{}, f1{};
  for (int shift : {0, 13}) {
    HandHistory h;
    for (int i = 0; i <= 80; ++i) {
      const double t = 0.5 * (i + shift);
      h.push(t, i < 70 ? 330 : 240, 20.0 * i, i >= 64 ? 2 : (i >= 24 ? 1 : 0), Phase::kUpdate);
    }
    build_plant_features(h.obs(0.5 * (80 + shift)), 0, shift == 0 ? f0 : f1);
  }
  for (int k = 0; k < kPlantObsDim; ++k) {
    EXPECT_NEAR(f0[k], f1[k], 1e-9) << plant_obs_spec().names[k];
  }
}

TEST(PlantFeatures, UseOnlyWhatIsMeasured) {
  // Two histories with the same readings, one with extra fields set that the builder must
  // not depend on beyond power_w (instantaneous power, temperature, clocks).
  HandHistory a, b;
  for (int i = 0; i <= 100; ++i) {
    a.push(0.5 * i, 280 + (i % 7), 10.0 * i, i / 30, Phase::kGenerate);
    b.push(0.5 * i, 280 + (i % 7), 10.0 * i, i / 30, Phase::kGenerate);
  }
  std::array<double, kPlantObsDim> fa{}, fb{};
  build_plant_features(a.obs(50), 0, fa);
  build_plant_features(b.obs(50), 0, fb);
  EXPECT_EQ(fa, fb);
  // A reading that does change: the newest power sample.
  b.push(50.5, 400, 1010, 3, Phase::kGenerate);
  a.push(50.5, 300, 1010, 3, Phase::kGenerate);
  build_plant_features(a.obs(50.5), 0, fa);
  build_plant_features(b.obs(50.5), 0, fb);
  EXPECT_NE(fa[0], fb[0]);
}

TEST(PlantFeatures, KnobLadderIsGeometric) {
  const KnobRange gs{true, 1, 16, 1};
  // Rungs: 1 2 3 4 5 6 8 10 13 16.
  EXPECT_EQ(knob_rung(gs, 8, +1), 10);
  EXPECT_EQ(knob_rung(gs, 8, -1), 6);
  EXPECT_EQ(knob_rung(gs, 8, 0), 8);
  EXPECT_EQ(knob_rung(gs, 10, +1), 13);
  EXPECT_EQ(knob_rung(gs, 13, +1), 16);
  EXPECT_EQ(knob_rung(gs, 16, +1), 16);
  EXPECT_EQ(knob_rung(gs, 1, -1), 1);
  EXPECT_EQ(knob_rung(gs, 7, +1), 8);  // off the ladder: to the adjacent rung
  EXPECT_EQ(knob_rung(gs, 7, -1), 6);
  const KnobRange gc{true, 1, 64, 1};
  EXPECT_EQ(knob_rung(gc, 64, -1), 61);  // … 39 49 61 64
  EXPECT_EQ(knob_rung(gc, 16, +1), 20);
}

TEST(PlantFeatures, KnobLevelsSpanTheLadderAndModesRoundTrip) {
  const KnobRange gs{true, 1, 16, 1};  // rungs 1 2 3 4 5 6 8 10 13 16: one per level
  const int want[10] = {1, 2, 3, 4, 5, 6, 8, 10, 13, 16};
  for (int l = 0; l < 10; ++l) EXPECT_EQ(knob_level(gs, l, 10), want[l]) << l;
  const KnobRange gc{true, 1, 64, 1};
  EXPECT_EQ(knob_level(gc, 0, 16), 1);
  EXPECT_EQ(knob_level(gc, 15, 16), 64);
  EXPECT_EQ(knob_level(gc, 7, 16), 10);  // rung round(7·16/15) = 7 of 1 2 3 4 5 6 8 10 …
  // The dense ladder has one rung per level and every value in 8..16.
  const int dense[22] = {1,  2,  3,  4,  5,  6,  8,  9,  10, 11, 12,
                         13, 14, 15, 16, 20, 25, 31, 39, 49, 61, 64};
  for (int l = 0; l < 22; ++l) EXPECT_EQ(knob_level(gc, l, 22, /*dense=*/true), dense[l]) << l;
  EXPECT_EQ(kKnobLevels[0], 22);
  // A level policy from the old {16, 10} ladder is rejected with a message that says so.
  auto old = knob_action_mode(ActionSpec::categorical({"gen_concurrency", "group_size"}, {16, 10}));
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("retrain"), std::string::npos) << old.status().message();
  for (KnobActionMode m : {KnobActionMode::kStep, KnobActionMode::kLevel}) {
    auto got = knob_action_mode(plant_action_spec(m));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(*got, m);
  }
  EXPECT_FALSE(
      knob_action_mode(ActionSpec::categorical({"gen_concurrency", "group_size"}, {3, 4})).ok());
}

// Reward accounting on the scripted plant: 300 W budget over 30 s windows, 5 s decisions,
// 60 s episodes.
struct EnvFixture {
  double conc = 10;
  std::vector<std::vector<std::string>> seen_overrides;
  std::vector<uint64_t> seen_seeds;
  ScriptedPlant* last = nullptr;

  std::unique_ptr<PlantEnv> make(PlantEnvConfig c) {
    auto env = PlantEnv::create(
        [this](uint64_t seed, const std::vector<std::string>& ov) -> Result<PlantEpisode> {
          seen_seeds.push_back(seed);
          seen_overrides.push_back(ov);
          auto p = std::make_unique<ScriptedPlant>(conc);
          last = p.get();
          PlantEpisode ep;
          ep.plant = std::move(p);
          ep.budget = gpu_budget(300, 30);
          return ep;
        },
        c);
    EXPECT_TRUE(env.ok()) << env.status().message();
    return std::move(env).value();
  }
};

PlantEnvConfig small_config() {
  PlantEnvConfig c;
  c.decision_period_s = 5;
  c.episode_s = 60;
  c.token_scale = 1000;
  c.violation_penalty = 4;
  c.excess_penalty = 40;
  c.churn_penalty = 0.5;
  return c;
}

// Steps `env` with `action` until the episode ends: the rewards in order; *last gets the
// final step.
std::vector<double> run_episode(PlantEnv& env, std::span<const double> action,
                                std::span<double> obs, StepResult* last = nullptr) {
  std::vector<double> rewards;
  StepResult r;
  while (!r.done()) {
    auto s = env.step(action, obs);
    if (!s.ok()) {
      ADD_FAILURE() << s.status().message();
      break;
    }
    r = *s;
    rewards.push_back(r.reward);
  }
  if (last != nullptr) *last = r;
  return rewards;
}

TEST(PlantEnv, RewardIsTokensMinusWindowPenaltyMinusChurn) {
  EnvFixture fx;
  fx.conc = 15;  // 350 W against a 300 W budget: every 30 s window is violated
  auto env = fx.make(small_config());
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(42, obs).ok());
  EXPECT_NEAR(obs[0], 350.0 / 300, 1e-12);
  const double stay[2] = {1, 1};
  const double excess = 4 + 40 * (350.0 / 300 - 1);
  StepResult r;
  const std::vector<double> rewards = run_episode(*env, stay, obs, &r);
  EXPECT_TRUE(r.truncated);
  EXPECT_FALSE(r.terminated);
  // 120 ticks (t = 0 … 59.5 s); decisions at ticks 0, 10, …, 110: 12 steps, the last one
  // 9 ticks long. Windows close at ticks 59 (step 6) and 119 (step 12).
  ASSERT_EQ(rewards.size(), 12u);
  const double tok_per_step = 10 * 15 * 5.0 / 1000;  // 150 tok/s for 5 s, in thousands
  for (size_t i = 0; i < 11; ++i) {
    EXPECT_NEAR(rewards[i], tok_per_step - (i == 5 ? excess : 0), 1e-9) << i;
  }
  EXPECT_NEAR(rewards[11], 10 * 15 * 4.5 / 1000 - excess, 1e-9);
  EXPECT_EQ(env->episode_stats().windows, 2);
  EXPECT_EQ(env->episode_stats().violations, 2);
  EXPECT_NEAR(env->episode_stats().tokens, 150 * 59.5, 1e-6);
  EXPECT_NEAR(env->episode_stats().energy_j, 350 * 0.5 * 120, 1e-6);
  int n = 0;
  const PlantEpisodeStats fin = env->take_finished(n);
  EXPECT_EQ(n, 1);
  EXPECT_EQ(fin.violations, 2);
}

TEST(PlantEnv, MarginChargesTheExcessOnWindowsNearTheBudget) {
  EnvFixture fx;
  fx.conc = 8;  // 280 W against 300 W: no violation, but within a 10 % margin
  PlantEnvConfig c = small_config();
  c.penalty_margin = 0.1;
  auto env = fx.make(c);
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(42, obs).ok());
  const double stay[2] = {1, 1};
  double total = 0;
  for (double x : run_episode(*env, stay, obs)) total += x;
  EXPECT_EQ(env->episode_stats().violations, 0);
  const double tokens_k = env->episode_stats().tokens / 1000;
  EXPECT_NEAR(total, tokens_k - 2 * 40 * (280.0 / 300 - 0.9), 1e-9);
}

TEST(PlantEnv, SlidingRuleChargesEveryFullTrailingWindow) {
  EnvFixture fx;
  fx.conc = 15;  // 350 W against 300 W throughout
  PlantEnvConfig c = small_config();
  c.window_rule = PlantEnvConfig::WindowRule::kSliding;
  auto env = fx.make(c);
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(42, obs).ok());
  const double stay[2] = {1, 1};
  const std::vector<double> rewards = run_episode(*env, stay, obs);
  // 60 samples per window: the trailing window is full from tick 59 on, so ticks 59..119
  // (61 samples) are judged, each charged (4 + 40·(350/300 − 1)) / 60.
  const double per_sample = (4 + 40 * (350.0 / 300 - 1)) / 60;
  const double tok_per_step = 10 * 15 * 5.0 / 1000;
  ASSERT_EQ(rewards.size(), 12u);
  for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(rewards[i], tok_per_step, 1e-9) << i;
  EXPECT_NEAR(rewards[5], tok_per_step - 2 * per_sample, 1e-9);  // ticks 51..60: 59, 60
  EXPECT_NEAR(rewards[6], tok_per_step - 10 * per_sample, 1e-9);
  EXPECT_EQ(env->episode_stats().windows, 61);
  EXPECT_EQ(env->episode_stats().violations, 61);
}

// The reward's window terms are control/window_judge.hpp's verdicts (the judge of the episode
// metrics and the oracle): replaying the power the plant produced through a judge gives the
// same windows, violations and penalty, under both rules, with power moving between windows.
TEST(PlantEnv, WindowPenaltyIsTheJudgesVerdict) {
  for (auto rule : {PlantEnvConfig::WindowRule::kTumbling, PlantEnvConfig::WindowRule::kSliding}) {
    EnvFixture fx;
    fx.conc = 12;  // 320 W
    PlantEnvConfig c = small_config();
    c.window_rule = rule;
    c.penalty_margin = 0.05;
    c.episode_s = 120;
    auto env = fx.make(c);
    std::array<double, kPlantObsDim> obs{};
    ASSERT_TRUE(env->reset(3, obs).ok());
    std::vector<double> power_w;  // per tick, the power the plant read
    power_w.push_back(fx.last->power_w());
    double rewards = 0;
    int moves = 0;
    StepResult r;
    for (int i = 0; !r.done(); ++i) {
      const double act[2] = {i % 5 < 2 ? 2.0 : 0.0, 1};  // up twice, down three times
      const double before = env->time_s();
      auto s = env->step(act, obs);
      ASSERT_TRUE(s.ok());
      r = *s;
      rewards += r.reward;
      moves = env->episode_stats().knob_moves;
      const auto ticks = static_cast<size_t>(std::llround((env->time_s() - before) / 0.5));
      for (size_t k = 0; k < ticks; ++k) power_w.push_back(fx.last->power_w());
    }
    ASSERT_EQ(power_w.size(), 240u);
    WindowJudge judge;
    const bool sliding = rule == PlantEnvConfig::WindowRule::kSliding;
    judge.reset(sliding ? WindowJudge::Rule::kSliding : WindowJudge::Rule::kTumbling, 1, 60);
    int windows = 0, violations = 0;
    double penalty = 0;
    for (double p : power_w) {
      judge.set(0, p / 300);
      if (!judge.advance()) continue;
      const double m = judge.mean(0);
      ++windows;
      violations += m > 1.0;
      const double charge = (m > 1.0 ? 4 : 0) + 40 * std::max(0.0, m - 0.95);
      penalty += sliding ? charge / 60 : charge;
    }
    EXPECT_EQ(env->episode_stats().windows, windows);
    EXPECT_EQ(env->episode_stats().violations, violations);
    ASSERT_GT(violations, 0);
    ASSERT_LT(violations, windows);  // the series tests both verdicts
    const double tokens_k = env->episode_stats().tokens / 1000;
    EXPECT_NEAR(rewards, tokens_k - penalty - 0.5 * moves, 1e-9);
  }
}

TEST(PlantEnv, LevelActionsSetTheKnobDirectly) {
  EnvFixture fx;
  PlantEnvConfig c = small_config();
  c.action_mode = KnobActionMode::kLevel;
  auto env = fx.make(c);
  EXPECT_EQ(env->action_spec().categories, (std::vector<int>{kKnobLevels[0], kKnobLevels[1]}));
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(1, obs).ok());
  const double lv[2] = {6, 9};  // gen_concurrency rung 6 (8, from 10); group_size 16 (from 8)
  ASSERT_TRUE(env->step(lv, obs).ok());
  EXPECT_EQ(fx.last->gen_concurrency(), 8);
  EXPECT_EQ(env->episode_stats().knob_moves, 2);
}

TEST(PlantEnv, ActionsMoveKnobsThroughTheLimiterAndCostChurn) {
  EnvFixture fx;
  fx.conc = 8;  // 280 W: under budget
  auto env = fx.make(small_config());
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(1, obs).ok());
  const double up_conc[2] = {2, 1};  // gen_concurrency up one rung (8 → 10), group stays
  auto s = env->step(up_conc, obs);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(fx.last->gen_concurrency(), 10);
  // Knob applied at t = 0: 100 tok/s for 5 s, minus one knob moved.
  EXPECT_NEAR(s->reward, 10 * 10 * 5.0 / 1000 - 0.5, 1e-9);
  EXPECT_EQ(env->episode_stats().knob_moves, 1);
  EXPECT_NEAR(obs[10], 9.0 / 63, 1e-12);  // gen_concurrency_frac of 10 in 1..64
}

TEST(PlantEnv, RandomisesBudgetAndKeepsTrainingSeedsApart) {
  EnvFixture fx;
  PlantEnvConfig c = small_config();
  c.budget_scale_lo = 0.85;
  c.budget_scale_hi = 1.15;
  c.ranges = {{"jobs.0.completion_median_tokens", 100, 200, false},
              {"jobs.0.group_size", 4, 16, true}};
  auto env = fx.make(c);
  std::array<double, kPlantObsDim> obs{};
  ASSERT_TRUE(env->reset(7, obs).ok());
  ASSERT_TRUE(env->reset(8, obs).ok());
  ASSERT_TRUE(env->reset(7, obs).ok());
  ASSERT_EQ(fx.seen_overrides.size(), 4u);  // probe + 3 resets
  EXPECT_TRUE(fx.seen_overrides[0].empty());
  ASSERT_EQ(fx.seen_overrides[1].size(), 3u);
  EXPECT_EQ(fx.seen_overrides[1][0].rfind("budget.watts=", 0), 0u);
  const double watts = std::stod(fx.seen_overrides[1][0].substr(13));
  EXPECT_GE(watts, 300 * 0.85);
  EXPECT_LE(watts, 300 * 1.15);
  EXPECT_EQ(fx.seen_overrides[1][2].rfind("jobs.0.group_size=", 0), 0u);
  EXPECT_NE(fx.seen_overrides[1], fx.seen_overrides[2]);  // another seed, another draw
  EXPECT_EQ(fx.seen_overrides[1], fx.seen_overrides[3]);  // same seed, same episode
  for (uint64_t s : fx.seen_seeds) EXPECT_GE(s, c.plant_seed_base);
}

// A family of two factories: each reset draws one member from the reset seed (same seed, same
// member), every member is drawn, and the budget of a member with a schedule is kept.
TEST(PlantEnvFamily, DrawsEveryMemberFromTheSeed) {
  std::vector<int> built(2, 0);
  std::vector<EpisodeFactory> family;
  for (int m = 0; m < 2; ++m) {
    family.push_back(
        [&built, m](uint64_t, const std::vector<std::string>&) -> Result<PlantEpisode> {
          ++built[static_cast<size_t>(m)];
          PlantEpisode ep;
          ep.plant = std::make_unique<ScriptedPlant>();
          ep.budget = gpu_budget(m == 0 ? 300.0 : 250.0);
          return ep;
        });
  }
  auto env = PlantEnv::create(family, small_config());
  ASSERT_TRUE(env.ok()) << env.status().message();
  EXPECT_EQ((*env)->family_size(), 2u);
  std::array<double, kPlantObsDim> obs{};
  std::vector<int> drawn(2, 0);
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    ASSERT_TRUE((*env)->reset(seed, obs).ok());
    const size_t m = (*env)->member();
    ASSERT_LT(m, 2u);
    ++drawn[m];
    EXPECT_EQ((*env)->episode_budget().entries.front().budget.watts, m == 0 ? 300.0 : 250.0);
  }
  EXPECT_GT(drawn[0], 0);
  EXPECT_GT(drawn[1], 0);
  ASSERT_TRUE((*env)->reset(5, obs).ok());
  const size_t m5 = (*env)->member();
  ASSERT_TRUE((*env)->reset(6, obs).ok());
  ASSERT_TRUE((*env)->reset(5, obs).ok());
  EXPECT_EQ((*env)->member(), m5);
  EXPECT_EQ(built[0] + built[1], 2 + 23);  // one probe per member, then one per reset
  EXPECT_FALSE(PlantEnv::create(std::vector<EpisodeFactory>{}, small_config()).ok());
}

// The completion-length curve of each episode: one of the configured shapes over the episode,
// factors inside [len_factor_lo, len_factor_hi]; growing rises, declining falls, u dips.
TEST(PlantEnvFamily, DrawsALengthCurvePerEpisode) {
  EnvFixture fx;
  PlantEnvConfig c = small_config();
  c.len_curves = {LenCurveShape::kGrowing, LenCurveShape::kU, LenCurveShape::kDeclining};
  c.len_factor_lo = 0.5;
  c.len_factor_hi = 2.5;
  auto env = fx.make(c);
  std::array<double, kPlantObsDim> obs{};
  std::vector<int> shapes(3, 0);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    ASSERT_TRUE(env->reset(seed, obs).ok());
    const std::vector<std::string>& ov = fx.seen_overrides.back();
    ASSERT_EQ(ov.size(), 1u);
    const std::string key = "jobs.0.completion_len_curve=";
    ASSERT_EQ(ov[0].rfind(key, 0), 0u) << ov[0];
    const std::vector<std::array<double, 2>> pts = env->len_curve();
    ASSERT_GE(pts.size(), 2u);
    EXPECT_EQ(pts.front()[0], 0);
    EXPECT_EQ(pts.back()[0], c.episode_s);
    for (const auto& p : pts) {
      EXPECT_GE(p[1], 0.5);
      EXPECT_LE(p[1], 2.5);
    }
    const LenCurveShape sh = env->len_shape();
    ++shapes[static_cast<size_t>(sh)];
    if (sh == LenCurveShape::kGrowing) {
      EXPECT_EQ(pts.size(), 2u);
      EXPECT_LE(pts[0][1], pts[1][1]);
    } else if (sh == LenCurveShape::kDeclining) {
      EXPECT_EQ(pts.size(), 2u);
      EXPECT_GE(pts[0][1], pts[1][1]);
    } else {
      ASSERT_EQ(pts.size(), 3u);
      EXPECT_LE(pts[1][1], pts[0][1]);
      EXPECT_LE(pts[1][1], pts[2][1]);
    }
  }
  for (int n : shapes) EXPECT_GT(n, 0);
}

// Budget steps: up to max_budget_steps unannounced steps, inside the episode's middle, each a
// factor in [budget_step_lo, budget_step_hi] on the first budget; the reward's judge follows
// the schedule (a step down makes the same power violate).
TEST(PlantEnvFamily, DrawsBudgetStepsInsideTheEpisode) {
  EnvFixture fx;
  PlantEnvConfig c = small_config();
  c.episode_s = 600;
  c.max_budget_steps = 2;
  c.budget_step_lo = 0.85;
  c.budget_step_hi = 1.1;
  auto env = fx.make(c);
  std::array<double, kPlantObsDim> obs{};
  std::vector<int> counts(3, 0);
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    ASSERT_TRUE(env->reset(seed, obs).ok());
    const BudgetSchedule& b = env->episode_budget();
    ASSERT_GE(b.entries.size(), 1u);
    ASSERT_LE(b.entries.size(), 3u);
    ++counts[b.entries.size() - 1];
    EXPECT_EQ(b.entries[0].budget.watts, 300);
    for (size_t i = 1; i < b.entries.size(); ++i) {
      EXPECT_GT(b.entries[i].start_s, b.entries[i - 1].start_s);
      EXPECT_GE(b.entries[i].start_s, 0.15 * c.episode_s);
      EXPECT_LE(b.entries[i].start_s, 0.85 * c.episode_s);
      EXPECT_GE(b.entries[i].budget.watts, 300 * 0.85 - 1e-9);
      EXPECT_LE(b.entries[i].budget.watts, 300 * 1.1 + 1e-9);
    }
  }
  for (int n : counts) EXPECT_GT(n, 0);  // 0, 1 and 2 steps all drawn
}

TEST(PlantEnv, RejectsAJobThePlantLacks) {
  auto env = PlantEnv::create(
      [](uint64_t, const std::vector<std::string>&) -> Result<PlantEpisode> {
        auto p = std::make_unique<ScriptedPlant>();
        PlantEpisode ep;
        ep.budget = gpu_budget(300);
        ep.plant = std::move(p);
        return ep;
      },
      [] {
        PlantEnvConfig c = small_config();
        c.job = 3;
        return c;
      }());
  ASSERT_FALSE(env.ok());
  EXPECT_NE(env.status().message().find("job 3"), std::string::npos);
}

}  // namespace
}  // namespace fw::rl

// The online per-GPU cap search (controllers/capnet_online_controller.hpp) on simulated
// pipeline jobs (sim/pipeline_scenario.hpp): no profile, no trained network. Simulated.

#include "controllers/capnet_online_controller.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "control/control_loop.hpp"
#include "pipeline_episode.hpp"
#include "sim/scenario.hpp"

namespace fw {
namespace {

using testing::source_path;

// Records, around the controller, the caps it holds for the job's GPUs at each decision.
class Recorder : public Controller {
 public:
  explicit Recorder(CapNetOnlineController& c) : c_(c) {}
  std::string name() const override { return "rec"; }
  double period_s() const override { return c_.period_s(); }
  void reset(const PlantInfo& info) override { c_.reset(info); }
  ActuatorSet claims() const override { return c_.claims(); }
  Command update(const Observation& obs) override {
    Command cmd = c_.update(obs);
    caps.push_back({obs.time_s, c_.caps_w()});
    return cmd;
  }
  // The mean requested cap over job GPUs [from, to) at the last decision at or before t.
  double mean_cap(double t, size_t from, size_t to) const {
    const std::vector<double>* last = nullptr;
    for (const auto& [ts, v] : caps)
      if (ts <= t) last = &v;
    if (last == nullptr) return 0;
    double s = 0;
    for (size_t k = from; k < to; ++k) s += (*last)[k];
    return s / static_cast<double>(to - from);
  }
  std::vector<std::pair<double, std::vector<double>>> caps;

 private:
  CapNetOnlineController& c_;
};

using Episode = testing::PipelineEpisode;

Episode run(const sim::Scenario& s, Controller* c, std::optional<double> nvml_util = std::nullopt) {
  return testing::run_pipeline_episode(s, c, /*history_s=*/150, nvml_util);
}

TEST(CapNetOnline, RefusesBadOptions) {
  CapNetOnlineConfig c;
  EXPECT_TRUE(CapNetOnlineController::create(c).ok());
  for (auto bad : {+[](CapNetOnlineConfig& x) { x.period_s = 0; },
                   +[](CapNetOnlineConfig& x) { x.settle_s = x.period_s; },
                   +[](CapNetOnlineConfig& x) {
                     x.target_loss = 0.01;
                     x.band = 0.01;
                   },
                   +[](CapNetOnlineConfig& x) { x.band = x.loss_max; },
                   +[](CapNetOnlineConfig& x) { x.target_loss = -0.01; },
                   +[](CapNetOnlineConfig& x) { x.loss_max = 0; },
                   +[](CapNetOnlineConfig& x) { x.horizon_s = 0; },
                   +[](CapNetOnlineConfig& x) { x.max_step_frac = 0; },
                   +[](CapNetOnlineConfig& x) { x.stages = -1; }}) {
    CapNetOnlineConfig x;
    bad(x);
    EXPECT_FALSE(CapNetOnlineController::create(x).ok());
  }
}

// No profile: it finds the stages that wait (every stage but the heaviest of each pipeline),
// lowers them until the step time moves, and saves energy within the 1.2 % bound.
TEST(CapNetOnline, LowersTheWaitingStagesWithinTheLossBound) {
  auto s =
      sim::load_scenario(source_path("scenarios/caps-pp4-a100pcie-x8.yaml"), {"duration_s=900"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  CapNetOnlineConfig cfg;
  cfg.stages = 4;
  auto c = CapNetOnlineController::create(cfg);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Recorder rec(*c);
  const Episode base = run(*s, nullptr), on = run(*s, &rec);
  ASSERT_TRUE(c->calibrated());
  // Stage 0 carries the most work (stage_work): each pipeline's sentinel, never capped.
  ASSERT_EQ(c->sentinels().size(), 2u);
  EXPECT_EQ(c->sentinels()[0], 0);
  EXPECT_EQ(c->sentinels()[1], 4);
  const double max_w = 300;  // A100-PCIe
  EXPECT_DOUBLE_EQ(c->caps_w()[0], max_w);
  for (int k : {1, 2, 3, 5, 6, 7}) EXPECT_LT(c->caps_w()[k], 0.9 * max_w) << k;
  const double lost = 1 - on.tokens / base.tokens;
  const double saved = 1 - (on.energy_j / on.tokens) / (base.energy_j / base.tokens);
  std::printf(
      "capnet-online on caps-pp4-a100pcie-x8 (900 s): saved %.2f %% at %.2f %% lost; "
      "loss estimate %.2f %%\n",
      100 * saved, 100 * lost, 100 * c->loss_estimate());
  EXPECT_GT(saved, 0.02);
  // 1.2 % plus one iteration of token granularity over 900 s (~100 iterations).
  EXPECT_LE(lost, 0.012 + 0.01);
  // The rule's target on 8.25 s iterations: 1.2 % − 0.229 %.
  EXPECT_NEAR(c->target(), 0.012 - 8.25 / 3600, 0.0002);
  EXPECT_NEAR(c->loss_estimate(), c->target(), 2 * cfg.band + 0.002);
}

// The loss target spends the 1.2 % budget less one iteration of completed-step granularity
// over the scored hour (a token count of completed iterations lags the time slowdown by up to
// one iteration): on the 64-GPU job (2.84 s iterations, 0.079 % of an hour) the search aims at
// ~1.12 %, on a job of 8.25 s iterations (0.229 %) at ~0.97 %. It aimed at a fixed 1.0 % before:
// 0.2 % of the budget left unspent where iterations are short.
TEST(CapNetOnline, AimsAtTheBoundLessOneIterationOfGranularity) {
  auto s = sim::load_scenario(source_path("scenarios/caps-pp8-a100x64.yaml"), {"duration_s=900"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  CapNetOnlineConfig cfg;
  cfg.stages = 8;
  auto c = CapNetOnlineController::create(cfg);
  ASSERT_TRUE(c.ok()) << c.status().message();
  const Episode base = run(*s, nullptr), on = run(*s, c.operator->());
  ASSERT_TRUE(c->calibrated());
  // The uncapped iteration time from the uncapped run's tokens (1048576 per iteration, the job
  // starts at 5 s).
  const double iter_s = (900 - 5) * 1048576 / base.tokens;
  const double want = 0.012 - iter_s / 3600;
  std::printf("64 A100: iteration %.3f s, wanted target %.3f %%, loss estimate %.3f %%\n", iter_s,
              100 * want, 100 * c->loss_estimate());
  ASSERT_GT(iter_s, 2.5);
  ASSERT_LT(iter_s, 3.2);
  EXPECT_NEAR(c->target(), want, 0.0002);
  // The estimate is read from power over whole iterations seen at the sample period (it swings
  // by a few % from one decision to the next on 2.8 s iterations), so the check is on the
  // completed-step loss: at the target within one iteration of token granularity over the run.
  const double lost = 1 - on.tokens / base.tokens;
  std::printf("64 A100: %.3f %% lost\n", 100 * lost);
  EXPECT_NEAR(lost, want, iter_s / (900 - 5));
}

// A pipeline slowed 1.2x from 600 s to 1200 s: the other pipeline's caps follow it down within
// ~40 s and are released within ~60 s of its recovery.
TEST(CapNetOnline, FollowsADynamicStragglerAndReleases) {
  auto s = sim::load_scenario(
      source_path("scenarios/caps-pp4-a100pcie-x8-straggler.yaml"),
      {"duration_s=1300",
       "jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 600, end_s: 1200}]"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  CapNetOnlineConfig cfg;
  cfg.stages = 4;
  auto c = CapNetOnlineController::create(cfg);
  ASSERT_TRUE(c.ok()) << c.status().message();
  Recorder rec(*c);
  run(*s, &rec);
  const double before = rec.mean_cap(595, 0, 4);  // pipeline 0, converged without a straggler
  const double during = rec.mean_cap(640, 0, 4);
  // Released by 1260 s: raised at 1210 s, it alternates 222/259 W (a raise, an undo) until
  // ~1260 s now that its power estimate is the last whole iteration's (phase-resolved pipeline
  // power; it was settled by 1240 s with the iteration-average power of the earlier model).
  const double after = rec.mean_cap(1260, 0, 4);
  std::printf("pipeline 0 mean cap: %.1f W before, %.1f W at 640 s, %.1f W at 1260 s\n", before,
              during, after);
  EXPECT_LT(during, before - 15);  // followed the straggler down
  EXPECT_LT(rec.mean_cap(1195, 0, 4), before - 15);
  EXPECT_GE(after, before - 3);  // released after the recovery
  // The straggling pipeline's sentinel stays uncapped throughout: it sets the pace.
  for (const auto& [t, v] : rec.caps) {
    if (!v.empty()) {
      EXPECT_DOUBLE_EQ(v[4], 300) << t;
    }
  }
}

// The search reads power, SM clock, the energy counter and the job's step count, never SM
// utilisation: on real NVML a rank blocked in NCCL reads as busy, so utilisation does not tell
// a stage that waits from the critical one. Its decisions on a plant that reports utilisation
// as NVML does (1 on every job GPU, computing or waiting) or not at all (NaN) are the ones it
// takes on the simulator's compute share, through a dynamic straggler; and it still saves
// within the loss bound. (The search that read utilisation saw no slack and no slowdown there:
// every GPU but the first of each pipeline went down to its minimum cap.)
TEST(CapNetOnline, DecisionsDoNotDependOnUtilisation) {
  auto s = sim::load_scenario(
      source_path("scenarios/caps-pp4-a100pcie-x8-straggler.yaml"),
      {"duration_s=900",
       "jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 400, end_s: 700}]"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  CapNetOnlineConfig cfg;
  cfg.stages = 4;
  std::vector<std::vector<std::pair<double, std::vector<double>>>> traces;
  std::vector<Episode> eps;
  for (std::optional<double> util :
       {std::optional<double>{}, std::optional<double>{1.0}, std::optional<double>{kUnset}}) {
    auto c = CapNetOnlineController::create(cfg);
    ASSERT_TRUE(c.ok()) << c.status().message();
    Recorder rec(*c);
    eps.push_back(run(*s, &rec, util));
    traces.push_back(rec.caps);
  }
  for (size_t r : {1u, 2u}) {
    ASSERT_EQ(traces[0].size(), traces[r].size()) << r;
    for (size_t i = 0; i < traces[0].size(); ++i) {
      ASSERT_EQ(traces[0][i].second, traces[r][i].second)
          << "run " << r << ", decision at " << traces[0][i].first << " s";
    }
    EXPECT_DOUBLE_EQ(eps[0].energy_j, eps[r].energy_j) << r;
  }
  const Episode base = run(*s, nullptr);
  const double lost = 1 - eps[1].tokens / base.tokens;
  const double saved = 1 - (eps[1].energy_j / eps[1].tokens) / (base.energy_j / base.tokens);
  std::printf(
      "capnet-online, NVML-like utilisation (900 s, straggler): saved %.2f %% at %.2f %% lost\n",
      100 * saved, 100 * lost);
  EXPECT_GT(saved, 0.02);
  EXPECT_LE(lost, 0.012 + 0.01);
}

}  // namespace
}  // namespace fw

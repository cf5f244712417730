// The frontier reference controller (controllers/frontier_controller.hpp) on simulated
// pipeline jobs (sim/pipeline_scenario.hpp). Simulated.

#include "controllers/frontier_controller.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "control/control_loop.hpp"
#include "pipeline_episode.hpp"
#include "sim/pipeline_profile.hpp"
#include "sim/scenario.hpp"

namespace fw {
namespace {

using testing::source_path;

FrontierConfig config_for(const sim::Scenario& s) {
  const sim::JobSpec& j = s.jobs.at(0);
  FrontierConfig c;
  auto prof = sim::profile_from_spec(j.pipeline);
  EXPECT_TRUE(prof.ok());
  c.profile = *prof;
  c.microbatches = j.pipeline.microbatches;
  c.dp = j.pipeline.dp;
  c.blocking_w = j.pipeline.blocking_w;
  c.margin_frac = j.pipeline.margin_frac;
  c.average_over_iteration = j.pipeline.average_over_iteration;
  return c;
}

// Records, around the frontier controller, when it wrote caps and what the job's step count
// was at that sample and at the one before.
class Recorder : public Controller {
 public:
  explicit Recorder(FrontierController& c) : c_(c) {}
  std::string name() const override { return "rec"; }
  double period_s() const override { return c_.period_s(); }
  void reset(const PlantInfo& info) override { c_.reset(info); }
  ActuatorSet claims() const override { return c_.claims(); }
  Command update(const Observation& obs) override {
    Command cmd = c_.update(obs);
    const double steps = obs.latest().jobs[0].steps_total;
    if (!cmd.power_cap_w.empty()) writes.push_back({obs.time_s, prev_steps, steps});
    factors.push_back({obs.time_s, c_.straggler_factor()});
    // Before the job's first busy sample no step boundary is seen: its first sample is one.
    prev_steps = obs.latest().jobs[0].phase == Phase::kIdle ? -1 : steps;
    return cmd;
  }
  struct Write {
    double t, steps_before, steps;
  };
  std::vector<Write> writes;
  std::vector<std::pair<double, double>> factors;
  double prev_steps = -1;

 private:
  FrontierController& c_;
};

using Episode = testing::PipelineEpisode;

Episode run(const sim::Scenario& s, Controller* c) { return testing::run_pipeline_episode(s, c); }

TEST(FrontierController, WritesAtStepBoundariesAndSavesWithinTheSlowdown) {
  auto s = sim::load_scenario(source_path("scenarios/caps-pp8-a40-x16.yaml"), {"duration_s=400"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto fc = FrontierController::create(config_for(*s));
  ASSERT_TRUE(fc.ok()) << fc.status().message();
  Recorder rec(*fc);
  const Episode base = run(*s, nullptr), fr = run(*s, &rec);
  ASSERT_FALSE(rec.writes.empty());
  for (const auto& w : rec.writes) {  // the first busy sample, or the step count grew
    EXPECT_TRUE(w.steps_before < 0 || w.steps > w.steps_before) << w.t;
  }
  EXPECT_EQ(rec.writes.size(), 1u);  // no straggler: the plan once
  const double lost = 1 - fr.tokens / base.tokens;
  const double saved = 1 - (fr.energy_j / fr.tokens) / (base.energy_j / base.tokens);
  std::printf(
      "frontier on caps-pp8-a40-x16 (400 s): saved %.2f %% at %.2f %% lost; planned "
      "%.2f %% at %.2f %%\n",
      100 * saved, 100 * lost, 100 * fc->base_plan().constant.energy_saved,
      100 * fc->base_plan().constant.time_increase);
  EXPECT_GT(saved, 0.0);
  // The plan's slowdown bound plus one iteration of token granularity over 400 s.
  EXPECT_LE(lost, 0.012 + 0.025);
}

TEST(FrontierController, FollowsADynamicStragglerAndReleases) {
  auto s = sim::load_scenario(
      source_path("scenarios/caps-pp4-a100pcie-x8-straggler.yaml"),
      {"duration_s=1350",
       "jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 600, end_s: 1200}]"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto fc = FrontierController::create(config_for(*s));
  ASSERT_TRUE(fc.ok()) << fc.status().message();
  Recorder rec(*fc);
  run(*s, &rec);
  auto factor_at = [&](double t) {
    double f = 1;
    for (const auto& [ts, v] : rec.factors)
      if (ts <= t) f = v;
    return f;
  };
  EXPECT_DOUBLE_EQ(factor_at(590), 1.0);
  // Straggler from 600 s: found within two measurements (2 × 30 s) plus settling.
  EXPECT_NEAR(factor_at(690), 1.2, 0.05);
  EXPECT_EQ(fc->straggler_pipeline(), -1);  // released by the end
  EXPECT_DOUBLE_EQ(factor_at(1300), 1.0);
  for (const auto& w : rec.writes) EXPECT_TRUE(w.steps_before < 0 || w.steps > w.steps_before);
}

}  // namespace
}  // namespace fw

// The frontier reference controller (controllers/frontier_controller.hpp) on simulated
// pipeline jobs (sim/pipeline_scenario.hpp). Simulated.

#include "controllers/frontier_controller.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "control/control_loop.hpp"
#include "pipeline_episode.hpp"
#include "sim/cluster.hpp"
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

Episode run(const sim::Scenario& s, Controller* c, std::optional<double> nvml_util = std::nullopt) {
  return testing::run_pipeline_episode(s, c, 0, nvml_util);
}

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
  // Held while the straggler lasts (it was released and found again every ~40 s when the
  // release read its activity ratio to the others), and released within 30 s of the recovery.
  int changes_during = 0;
  for (size_t i = 1; i < rec.factors.size(); ++i) {
    if (rec.factors[i].second == rec.factors[i - 1].second) continue;
    std::printf("straggler factor %.3f -> %.3f at %.1f s\n", rec.factors[i - 1].second,
                rec.factors[i].second, rec.factors[i].first);
    if (rec.factors[i].first > 700 && rec.factors[i].first < 1200) ++changes_during;
  }
  EXPECT_EQ(changes_during, 0);
  EXPECT_DOUBLE_EQ(factor_at(1230), 1.0);
  EXPECT_DOUBLE_EQ(factor_at(590), 1.0);
  // Straggler from 600 s: found within two measurements (2 × 30 s) plus settling.
  EXPECT_NEAR(factor_at(690), 1.2, 0.05);
  EXPECT_EQ(fc->straggler_pipeline(), -1);  // released by the end
  EXPECT_DOUBLE_EQ(factor_at(1300), 1.0);
  for (const auto& w : rec.writes) EXPECT_TRUE(w.steps_before < 0 || w.steps > w.steps_before);
}

// Stragglers are found and released from power, the SM clock and the energy counter, never
// from SM utilisation (on real NVML a rank blocked in NCCL reads as busy): on a plant that
// reports utilisation as NVML does (1 on every job GPU) or not at all (NaN) the controller
// writes the same caps at the same times as on the simulator's compute share, and still
// finds the 1.2x straggler and releases it. (Reading utilisation, it found none there.)
TEST(FrontierController, StragglerDecisionsDoNotDependOnUtilisation) {
  auto s = sim::load_scenario(
      source_path("scenarios/caps-pp4-a100pcie-x8-straggler.yaml"),
      {"duration_s=800",
       "jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 300, end_s: 600}]"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<std::vector<std::pair<double, double>>> factors;
  std::vector<size_t> writes;
  std::vector<Episode> eps;
  for (std::optional<double> util :
       {std::optional<double>{}, std::optional<double>{1.0}, std::optional<double>{kUnset}}) {
    auto fc = FrontierController::create(config_for(*s));
    ASSERT_TRUE(fc.ok()) << fc.status().message();
    Recorder rec(*fc);
    eps.push_back(run(*s, &rec, util));
    factors.push_back(rec.factors);
    writes.push_back(rec.writes.size());
  }
  for (size_t r : {1u, 2u}) {
    EXPECT_EQ(factors[0], factors[r]) << r;
    EXPECT_EQ(writes[0], writes[r]) << r;
    EXPECT_DOUBLE_EQ(eps[0].energy_j, eps[r].energy_j) << r;
  }
  auto factor_at = [&](double t) {
    double f = 1;
    for (const auto& [ts, v] : factors[1])
      if (ts <= t) f = v;
    return f;
  };
  for (size_t i = 1; i < factors[1].size(); ++i) {
    if (factors[1][i].second != factors[1][i - 1].second) {
      std::printf("NVML-like utilisation: straggler factor %.3f -> %.3f at %.1f s\n",
                  factors[1][i - 1].second, factors[1][i].second, factors[1][i].first);
    }
  }
  EXPECT_DOUBLE_EQ(factor_at(290), 1.0);
  EXPECT_NEAR(factor_at(400), 1.2, 0.05);
  EXPECT_DOUBLE_EQ(factor_at(680), 1.0);
}

// Schedule mode (the planner's cap per stage per 1F1B phase): the controller keys each stage's
// phases to the step boundaries it sees and the plan's phase offsets; checked against the
// phases the simulated job reports (Cluster::pipeline_run: the framework's hooks). Prints the
// saving against the constant mode on the same 600 s (simulated, seed 1).
class PhaseProbe : public Controller {
 public:
  PhaseProbe(FrontierController& c, const sim::Cluster& plant) : c_(c), plant_(plant) {}
  std::string name() const override { return "probe"; }
  double period_s() const override { return c_.period_s(); }
  void reset(const PlantInfo& info) override { c_.reset(info); }
  ActuatorSet claims() const override { return c_.claims(); }
  Command update(const Observation& obs) override {
    Command cmd = c_.update(obs);
    const sim::PipelineRun* run = plant_.pipeline_run(0);
    if (!cmd.power_cap_w.empty()) ++writes;
    if (run && run->started() && obs.time_s > 30 && c_.step_start_s() >= 0) {
      anchor_err_s = std::max(anchor_err_s, std::abs(c_.step_start_s() - run->iteration_start_s()));
      const PhaseTable& tb = c_.base_table();
      const double t = obs.time_s - run->iteration_start_s();
      for (size_t k = 0; k < 16; ++k) {
        const size_t st = k % tb.steady_s.size();
        const int want = t < tb.steady_s[st] ? 0 : t < tb.cool_s[st] ? 1 : 2;
        agree += static_cast<int>(run->phase(k)) == want;
        ++samples;
      }
    }
    return cmd;
  }
  int writes = 0, agree = 0, samples = 0;
  double anchor_err_s = 0;

 private:
  FrontierController& c_;
  const sim::Cluster& plant_;
};

TEST(FrontierController, ScheduleModeFollowsThePhasesTheJobReports) {
  auto s = sim::load_scenario(source_path("scenarios/caps-pp8-a40-x16.yaml"), {"duration_s=600"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  FrontierConfig cfg = config_for(*s);
  cfg.schedule = true;
  auto fc = FrontierController::create(cfg);
  ASSERT_TRUE(fc.ok()) << fc.status().message();
  const PhaseTable& tb = fc->base_table();
  ASSERT_EQ(tb.caps_w.size(), 8u);
  // Stage 0 starts in warm-up (7 forwards), the last stage has none; cool-down after steady.
  EXPECT_GT(tb.steady_s[0], 0);
  // The last stage has no warm-up: it waits for its first (steady) forward, at the steady cap.
  EXPECT_GT(tb.steady_s[7], 0);
  EXPECT_DOUBLE_EQ(tb.caps_w[7][0], tb.caps_w[7][1]);
  for (size_t st = 0; st < 8; ++st) EXPECT_LT(tb.steady_s[st], tb.cool_s[st]) << st;
  auto plant = sim::make_cluster(*s, 1);
  PhaseProbe probe(*fc, *plant);
  LoopConfig lc;
  lc.duration_s = s->duration_s;
  lc.windows_s = {30};
  ControlLoop loop(*plant, s->budget, lc);
  loop.add_controller(&probe);
  ASSERT_TRUE(loop.run().ok());
  const EpisodeResult r = loop.result();
  const Episode base = run(*s, nullptr);
  auto cc = FrontierController::create(config_for(*s));
  ASSERT_TRUE(cc.ok());
  const Episode constant = run(*s, &*cc);
  auto saved = [&](const Episode& e) {
    return 1 - (e.energy_j / e.tokens) / (base.energy_j / base.tokens);
  };
  const Episode sched{r.energy_j, r.tokens};
  std::printf(
      "caps-pp8-a40-x16 (600 s, seed 1): schedule saved %.2f %% at %.2f %% lost (planned %.2f %% "
      "at %.2f %%); constant %.2f %% at %.2f %% (planned %.2f %% at %.2f %%); phase agreement "
      "%.1f %%, step anchor within %.2f s, %d writes\n",
      100 * saved(sched), 100 * (1 - sched.tokens / base.tokens),
      100 * fc->base_plan().schedule.energy_saved, 100 * fc->base_plan().schedule.time_increase,
      100 * saved(constant), 100 * (1 - constant.tokens / base.tokens),
      100 * cc->base_plan().constant.energy_saved, 100 * cc->base_plan().constant.time_increase,
      100.0 * probe.agree / std::max(1, probe.samples), probe.anchor_err_s, probe.writes);
  // The step anchor: the step began within one sample period (0.5 s) before it was seen.
  EXPECT_LE(probe.anchor_err_s, 0.5 + 1e-9);
  // The timetable matches the job's own phase reports at most samples (they differ while a
  // rank waits for its first op of a phase, and where the schedule's clocks are not the plan's).
  EXPECT_GT(probe.agree, 0.85 * probe.samples);
  EXPECT_GT(probe.writes, 60);  // switched within iterations, not once
  EXPECT_GT(saved(sched), 0.0);
}

// Issue 27's loss bound on what the plan controls: the realised iteration time under the
// frontier's caps (from the simulated job's step starts, Cluster::pipeline_run) against the
// uncontrolled job's over the same span, at most the planned increase + 0.1 % (allowance: the
// offline profile's 15 MHz clock steps against the simulator's continuous clock, and the cap
// margin). The episode's token loss above that is the completed-step lump: at most one
// iteration in the episode (~0.25 % an hour here; docs/caps.md).
class StepProbe : public Controller {
 public:
  StepProbe(Controller* c, const sim::Cluster& plant, std::vector<double> at)
      : c_(c), plant_(plant), at_(std::move(at)) {}
  std::string name() const override { return "steps"; }
  double period_s() const override { return 0.5; }
  void reset(const PlantInfo& info) override {
    if (c_) c_->reset(info);
  }
  ActuatorSet claims() const override { return only_actuator(kCapActuator); }
  Command update(const Observation& obs) override {
    Command cmd = c_ ? c_->update(obs) : Command{};
    const sim::PipelineRun* run = plant_.pipeline_run(0);
    for (double t : at_) {
      if (std::abs(obs.time_s - t) < 0.25 && run)
        marks.push_back({obs.latest().jobs[0].steps_total, run->iteration_start_s()});
    }
    return cmd;
  }
  std::vector<std::pair<double, double>> marks;  // (steps, when the current step began)
  double step_s() const {
    return marks.size() < 2 ? 0
                            : (marks.back().second - marks.front().second) /
                                  (marks.back().first - marks.front().first);
  }

 private:
  Controller* c_;
  const sim::Cluster& plant_;
  std::vector<double> at_;
};

double realised_step_s(const sim::Scenario& s, Controller* c, std::vector<double> at) {
  auto plant = sim::make_cluster(s, 1);
  StepProbe probe(c, *plant, std::move(at));
  LoopConfig lc;
  lc.duration_s = s.duration_s;
  lc.windows_s = {30};
  ControlLoop loop(*plant, s.budget, lc);
  loop.add_controller(&probe);
  EXPECT_TRUE(loop.run().ok());
  return probe.step_s();
}

TEST(FrontierController, RealisedSlowdownWithinThePlannedOne) {
  struct Case {
    const char* file;
    std::vector<std::string> sets;
    std::vector<double> at;  // the span measured (a straggler in force over it, if any)
  };
  const std::vector<Case> cases = {
      {"scenarios/caps-pp8-a40-x16.yaml", {"duration_s=1000"}, {100, 990}},
      {"scenarios/caps-pp4-a100x8-straggler.yaml",
       {"duration_s=1500",
        "jobs.0.stragglers=[{pipeline: 1, factor: 1.2, start_s: 300, end_s: 1500}]"},
       {700, 1490}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.file);
    auto s = sim::load_scenario(source_path(k.file), k.sets);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto fc = FrontierController::create(config_for(*s));
    ASSERT_TRUE(fc.ok()) << fc.status().message();
    const double t_u = realised_step_s(*s, nullptr, k.at);
    const double t_f = realised_step_s(*s, &*fc, k.at);
    ASSERT_GT(t_u, 0);
    const double planned = fc->base_plan().constant.time_increase;
    std::printf("%s: realised step time +%.3f %% (planned +%.3f %%), straggler factor %.2f\n",
                k.file, 100 * (t_f / t_u - 1), 100 * planned, fc->straggler_factor());
    EXPECT_LE(t_f / t_u - 1, planned + 0.001);
    EXPECT_LE(planned, 0.012);
  }
}

}  // namespace
}  // namespace fw

// Each baseline on the first-order test plant (test_plant.hpp): 1 GPU, demand
// 60 + 20·gen_concurrency + 5·group_size W, budget 300 W over 30 s windows.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "../control/test_plant.hpp"
#include "control/control_loop.hpp"
#include "controllers/oracle_controller.hpp"
#include "controllers/pid_controller.hpp"
#include "controllers/static_calibration.hpp"
#include "controllers/static_controller.hpp"
#include "controllers/threshold_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "controllers/zeus_controller.hpp"

namespace fw {
namespace {

using testing::FirstOrderPlant;
using testing::one_budget;

Actuator conc() {
  Actuator a;
  a.kind = Actuator::Kind::kKnob;
  a.knob = Knob::kGenConcurrency;
  return a;
}

struct Outcome {
  EpisodeResult result;
  KnobValues final_knobs;
  double final_cap_w;
};

Outcome run(Controller& c, double duration_s = 600, uint64_t seed = 1, double budget_w = 300,
            LimiterConfig lim = {}, bool clonable = true) {
  std::unique_ptr<FirstOrderPlant> plant = clonable
                                               ? std::make_unique<FirstOrderPlant>(seed)
                                               : std::make_unique<testing::UnclonablePlant>(seed);
  const BudgetSchedule budget = one_budget(budget_w);
  LoopConfig lc;
  lc.duration_s = duration_s;
  ControlLoop loop(*plant, budget, lc, lim);
  loop.add_controller(&c);
  EXPECT_TRUE(loop.run().ok());
  return {loop.result(), plant->knobs(), plant->caps()[0]};
}

TEST(Uncontrolled, KnobsAtMaximaCapsAtDefault) {
  UncontrolledController u;
  const Outcome r = run(u);
  EXPECT_EQ(r.final_knobs, (KnobValues{16, 16}));
  EXPECT_DOUBLE_EQ(r.final_cap_w, 400);
  EXPECT_GT(r.result.violation_rate[1], 0.9);  // 400 W against 300 W
}

TEST(Static, HoldsItsSetting) {
  StaticController s(conc(), 0.0);
  const Outcome r = run(s, 60);
  EXPECT_EQ(r.final_knobs[0], 1);
  EXPECT_EQ(r.final_knobs[1], 16);  // non-actuated knob as uncontrolled
  StaticController v(conc(), 0, /*value=*/5);
  EXPECT_EQ(run(v, 60).final_knobs[0], 5);
}

TEST(Static, PinnedKnobsHeldWhileCapsAreTheActuator) {
  Actuator caps;  // default kind: caps
  StaticController s(caps, 0, /*value=*/250, 10, KnobValues{3, 99});
  const Outcome r = run(s, 60);
  EXPECT_EQ(r.final_knobs[0], 3);
  EXPECT_EQ(r.final_knobs[1], 16);  // pinned above the range: clamped to its maximum
  EXPECT_DOUBLE_EQ(r.final_cap_w, 250);
}

TEST(Static, CalibrationFindsLargestSafeSetting) {
  // demand = 60 + 20c + 80 (group 16) ≤ 300 W → c ≤ 8; with noise, 8 sits on the line.
  StaticCalibrationConfig cfg;
  cfg.actuator = conc();
  cfg.seeds = {101, 102};
  cfg.duration_s = 300;
  cfg.max_candidates = 4;  // forces the bisection path
  const BudgetSchedule budget = one_budget(300);
  auto make = [](uint64_t seed) { return std::make_unique<FirstOrderPlant>(seed); };
  auto cal = calibrate_static(make, budget, cfg);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_TRUE(cal->found);
  EXPECT_TRUE(cal->value == 7 || cal->value == 8) << cal->value;
  EXPECT_LE(cal->worst_ratio, 1.0);
  // One rung up is unsafe on some calibration seed.
  double worst_up = 0;
  for (uint64_t s : cfg.seeds) {
    auto w = worst_window_ratio(make, budget, cfg, (cal->value + 1 - 1) / 15.0, s);
    ASSERT_TRUE(w.ok());
    worst_up = std::max(worst_up, *w);
  }
  EXPECT_GT(worst_up, 1.0);
  // An impossible budget: nothing is safe, the lowest rung is returned.
  auto none = calibrate_static(make, one_budget(100), cfg);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->found);
  EXPECT_EQ(none->value, 1);
}

TEST(Threshold, StepsDownAboveUpperAndUpBelowLower) {
  ThresholdConfig tc;
  tc.actuator = conc();
  tc.measure_s = 10;
  ThresholdController t(tc);
  const Outcome r = run(t, 1800);
  // Starts at c = 16 (400 W); settles where 0.7·300 ≤ power ≤ 0.9·300 → 210..270 W → c in 4..6 with
  // group 16.
  EXPECT_GE(r.final_knobs[0], 3);
  EXPECT_LE(r.final_knobs[0], 7);
  EXPECT_LE(r.result.violation_rate[1], 4.0 / 60);  // only while stepping down from 16
  // Custom thresholds move the band: 0.3..0.5 of budget → 90..150 W → c in 0..0.5 → 1.
  tc.upper = 0.5;
  tc.lower = 0.3;
  ThresholdController low(tc);
  EXPECT_EQ(run(low, 900).final_knobs[0], 1);
}

TEST(Threshold, OnCaps) {
  ThresholdConfig tc;  // caps by default
  tc.measure_s = 10;
  ThresholdController t(tc);
  const Outcome r = run(t, 900);
  EXPECT_GE(r.final_cap_w, 200);
  EXPECT_LE(r.final_cap_w, 280);
  EXPECT_EQ(r.final_knobs[0], 16);
}

TEST(Pid, TracksTargetOnKnob) {
  PidConfig pc;
  pc.actuator = conc();
  pc.signal = PidConfig::Signal::kMean;
  pc.kp = 0.5;
  pc.ki = 0.1;
  pc.period_s = 5;
  pc.target = 0.9;
  PidController p(pc);
  const Outcome r = run(p, 1200);
  // 0.9·300 = 270 W ↔ c = 6.5: the knob ends near there, violations rare.
  EXPECT_GE(r.final_knobs[0], 5);
  EXPECT_LE(r.final_knobs[0], 8);
  EXPECT_LT(r.result.violation_rate[1], 0.1);
  EXPECT_NEAR(r.result.mean_power_w, 270, 25);
}

TEST(Pid, TracksTargetOnCapsAndIntegralDoesNotWindUp) {
  PidConfig pc;  // caps
  pc.signal = PidConfig::Signal::kMean;
  pc.kp = 0.5;
  pc.ki = 0.1;
  pc.period_s = 5;
  pc.target = 0.9;
  PidController p(pc);
  const Outcome r = run(p, 1200);
  EXPECT_NEAR(r.final_cap_w, 270, 25);
  // Unreachable target (budget above the plant's maximum): the integral saturates at the
  // top instead of winding up, so a later over-budget phase is answered at once.
  PidController sat(pc);
  const Outcome s = run(sat, 300, 1, /*budget_w=*/2000);
  EXPECT_DOUBLE_EQ(s.final_cap_w, 400);
}

TEST(Pid, PeakSignalKeepsEveryWindowUnderTarget) {
  // Defaults: peak of rolling 30 s window means over the last 120 s, decisions every 30 s.
  PidConfig pc;
  pc.actuator = conc();
  pc.target = 0.9;
  PidController p(pc);
  const Outcome r = run(p, 3600);
  EXPECT_GE(r.final_knobs[0], 5);
  EXPECT_LE(r.final_knobs[0], 7);
  EXPECT_LE(r.result.violation_rate[1], 10.0 / 120);  // only during the slow first descent
}

TEST(Zeus, ProfilesCapsThenHoldsTheCheapest) {
  ZeusConfig zc;
  zc.min_profile_s = 20;
  zc.min_warmup_s = 2;
  ZeusController z(zc);
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  LoopConfig lc;
  lc.duration_s = 1200;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&z);
  ASSERT_TRUE(loop.run().ok());
  const double chosen = z.chosen_caps_w()[0];
  ASSERT_TRUE(std::isfinite(chosen));  // profiling finished
  // Caps from 400 down to 100 in 25 W strides.
  EXPECT_EQ(std::fmod(400 - chosen, 25), 0);
  EXPECT_DOUBLE_EQ(plant.caps()[0], chosen);
  // η = 1 minimises energy per token: in this plant tokens ∝ sqrt(power), so the lowest cap.
  zc.eta = 1;
  ZeusController e(zc);
  run(e, 1200);
  EXPECT_DOUBLE_EQ(e.chosen_caps_w()[0], 100);
  // η = 0 minimises time per token: the highest cap (460 W demand > 400 W).
  zc.eta = 0;
  ZeusController t(zc);
  run(t, 1200);
  EXPECT_DOUBLE_EQ(t.chosen_caps_w()[0], 400);
}

TEST(Oracle, AtLeastTheTokensOfEverySafeBaselineAndUnderBudget) {
  OracleConfig oc;
  oc.actuators = {conc()};
  OracleController o(oc);
  const Outcome ro = run(o, 900, 5);
  EXPECT_EQ(o.blind_decisions(), 0);
  EXPECT_EQ(ro.result.violation_rate[1], 0.0);
  ThresholdConfig tc;
  tc.actuator = conc();
  ThresholdController t(tc);
  const Outcome rt = run(t, 900, 5);
  StaticController s(conc(), 6.0 / 15);  // c = 7: safe
  const Outcome rs = run(s, 900, 5);
  EXPECT_LE(rs.result.violation_rate[1], ro.result.violation_rate[1]);
  EXPECT_GE(ro.result.tokens, rt.result.tokens);
  EXPECT_GE(ro.result.tokens, rs.result.tokens);
}

TEST(Oracle, SlidingRuleKeepsEveryTrailingWindowUnderBudget) {
  OracleConfig oc;
  oc.actuators = {conc()};
  oc.sliding = true;
  OracleController o(oc);
  const Outcome ro = run(o, 900, 5);
  EXPECT_EQ(ro.result.sliding_violation_rate, 0.0);
  StaticController s(conc(), 6.0 / 15);  // c = 7: safe
  const Outcome rs = run(s, 900, 5);
  EXPECT_EQ(rs.result.sliding_violation_rate, 0.0);
  EXPECT_GE(ro.result.tokens, rs.result.tokens);
}

TEST(Oracle, BlindWithoutACloneablePlant) {
  OracleConfig oc;
  oc.actuators = {conc()};
  OracleController o(oc);
  run(o, 60, 1, 300, {}, /*clonable=*/false);
  EXPECT_GT(o.blind_decisions(), 0);
}

TEST(StaticCalibration, CoarseRungsSpanTheLadderEvenlyWithoutDuplicates) {
  EXPECT_EQ(coarse_rungs(5, 12), (std::vector<int>{0, 1, 2, 3, 4}));  // fewer rungs than asked
  EXPECT_EQ(coarse_rungs(1, 12), (std::vector<int>{0}));
  const std::vector<int> r = coarse_rungs(100, 12);
  ASSERT_EQ(r.size(), 12u);
  EXPECT_EQ(r.front(), 0);
  EXPECT_EQ(r.back(), 99);
  EXPECT_EQ(r[1], 9);                                          // round(99 / 11)
  EXPECT_EQ(coarse_rungs(100, 0), (std::vector<int>{0, 99}));  // at least the two ends
}

}  // namespace
}  // namespace fw

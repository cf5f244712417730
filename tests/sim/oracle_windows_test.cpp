// The oracle's window rule on the simulated 7B GRPO job (scenarios/grpo-7b-a100.yaml): with
// tumbling windows its foresight times the update phases across window boundaries, so the
// trailing-window (sliding) rate is broken; with windows=sliding it is not.

#include <gtest/gtest.h>

#include <cstdio>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "controllers/oracle_controller.hpp"
#include "sim/scenario.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

EpisodeResult run_oracle(const Scenario& s, bool sliding) {
  auto plant = make_plant(s, 1);
  LoopConfig lc;
  lc.sample_period_s = s.sample_period_s;
  lc.duration_s = 600;
  ControlLoop loop(*plant, s.budget, lc);
  OracleConfig oc;
  oc.actuators = resolve_actuators("all", plant->info()).value();
  oc.sliding = sliding;
  OracleController o(oc);
  loop.add_controller(&o);
  EXPECT_TRUE(loop.run().ok());
  EXPECT_EQ(o.blind_decisions(), 0);
  return loop.result();
}

TEST(OracleWindows, SlidingRuleHoldsWhereTheTumblingOneIsGamed) {
  const Scenario s = testing::load_or_die("scenarios/grpo-7b-a100.yaml");
  const EpisodeResult tumbling = run_oracle(s, false);
  const EpisodeResult sliding = run_oracle(s, true);
  std::printf(
      "[oracle] 7B, 600 s, seed 1: tumbling rule %.0f tokens, sliding rate %.2f %%; "
      "sliding rule %.0f tokens, sliding rate %.2f %%\n",
      tumbling.tokens, 100 * tumbling.sliding_violation_rate, sliding.tokens,
      100 * sliding.sliding_violation_rate);
  EXPECT_GT(tumbling.sliding_violation_rate, 0.02);
  // Each rule holds where it is the metric's own rule: the oracle's imagined windows are
  // judged by the episode's window judge (30 s windows: index 1).
  ASSERT_EQ(tumbling.windows_s[1], s.budget.entries.front().budget.window_s);
  EXPECT_EQ(tumbling.violation_rate[1], 0.0);
  EXPECT_EQ(sliding.sliding_violation_rate, 0.0);
  EXPECT_LT(sliding.tokens, tumbling.tokens);  // the stricter rule costs tokens
}

}  // namespace
}  // namespace fw::sim

// The oracle judges its imagined futures with the episode's own window judge: its clones
// replay the real future (noise-free plant), so a setting it finds feasible must leave no
// violation in the episode metrics under the same rule.

#include <gtest/gtest.h>

#include "control/control_loop.hpp"
#include "controllers/oracle_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "test_plant.hpp"

namespace fw {
namespace {

using testing::FirstOrderPlant;
using testing::one_budget;

EpisodeResult run(Controller& c) {
  FirstOrderPlant plant(1, 1, /*noise_w=*/0);
  const BudgetSchedule budget = one_budget(300);  // node scope, 30 s windows
  LoopConfig lc;
  lc.duration_s = 300;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&c);
  EXPECT_TRUE(loop.run().ok());
  return loop.result();
}

OracleConfig oracle_config(bool sliding) {
  OracleConfig oc;
  Actuator a;
  a.kind = Actuator::Kind::kKnob;
  a.knob = Knob::kGenConcurrency;
  oc.actuators = {a};
  oc.horizon_s = 60;
  oc.sliding = sliding;
  return oc;
}

TEST(OracleJudge, FeasibleUnderItsRuleMeansNoViolationInTheMetrics) {
  UncontrolledController u;
  const EpisodeResult free_run = run(u);
  ASSERT_EQ(free_run.windows_s[1], 30);
  ASSERT_GT(free_run.violation_rate[1], 0.5);  // uncontrolled: 460 W against 300 W
  ASSERT_GT(free_run.sliding_violation_rate, 0.5);

  OracleController tumbling(oracle_config(false));
  const EpisodeResult t = run(tumbling);
  EXPECT_EQ(tumbling.blind_decisions(), 0);
  EXPECT_EQ(t.violation_rate[1], 0.0);
  EXPECT_GT(t.tokens, 0.5 * free_run.tokens);

  OracleController sliding(oracle_config(true));
  const EpisodeResult s = run(sliding);
  EXPECT_EQ(s.sliding_violation_rate, 0.0);
  EXPECT_EQ(s.violation_rate[1], 0.0);
}

}  // namespace
}  // namespace fw

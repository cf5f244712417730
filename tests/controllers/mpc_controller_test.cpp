// The mpc controller (controllers/mpc_controller.hpp) on the simulated 7B GRPO job: its shield
// keeps every trailing window under the budget from an unsafe plan, and a replan on the twin
// moves it to the twin's best safe setting.

#include "controllers/mpc_controller.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "control/control_loop.hpp"
#include "sim/scenario.hpp"

namespace fw {
namespace {

sim::Scenario grpo_7b() {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml", {});
  EXPECT_TRUE(s.ok()) << s.status().message();
  return s.ok() ? *s : sim::Scenario{};
}

// A twin that never fits (the plan stays the initial one), or one whose plants are the
// declared scenario's (no drift to learn).
class FixedTwin : public MpcTwin {
 public:
  explicit FixedTwin(const sim::Scenario* s) : s_(s) {}
  void reset() override { observed = 0; }
  void observe(const Snapshot&) override { ++observed; }
  Result<Fit> refit(double) override {
    if (s_ == nullptr) return Status::Unavailable("no fit");
    const sim::Scenario* s = s_;
    return Fit{[s](uint64_t seed) { return sim::make_plant(*s, seed); }, {{"fixed", true}}};
  }
  int observed = 0;

 private:
  const sim::Scenario* s_;
};

// The top of every ladder's caps and the job's configured knobs: uncontrolled, which breaks
// the 314.6 W budget in most steps of this job.
MpcSetting unsafe_setting() {
  MpcSetting s;
  s.inner = Actuator::of_index(kCapActuator);
  s.fraction = 1.0;
  return s;
}

MpcConfig config(const PlantInfo& info, bool shield) {
  MpcConfig c;
  c.shield = shield;
  c.replan_s = 1e9;
  auto acts = resolve_actuators("all", info);
  EXPECT_TRUE(acts.ok());
  c.search.actuators = *acts;
  c.search.actuators.push_back(Actuator::of_index(kCapActuator));
  c.search.base.seeds = {1000001};
  c.search.base.duration_s = 300;
  c.search.grid = 3;
  return c;
}

EpisodeResult run(const sim::Scenario& s, MpcController& ctrl, double duration_s) {
  auto plant = sim::make_plant(s, 500001);
  LoopConfig lc;
  lc.duration_s = duration_s;
  ControlLoop loop(*plant, s.budget, lc);
  loop.add_controller(&ctrl);
  EXPECT_TRUE(loop.run().ok());
  return loop.result();
}

TEST(MpcController, ShieldKeepsEveryTrailingWindowUnderTheBudget) {
  const sim::Scenario s = grpo_7b();
  auto probe = sim::make_plant(s, 1);
  for (bool shield : {false, true}) {
    auto twin = std::make_unique<FixedTwin>(nullptr);
    MpcController ctrl(config(probe->info(), shield), std::move(twin), unsafe_setting());
    const EpisodeResult r = run(s, ctrl, 900);
    if (shield) {
      EXPECT_EQ(r.sliding_violation_rate, 0.0);
      EXPECT_LE(r.worst_sliding_ratio, 1.0);
      EXPECT_EQ(r.offset_violation_rate, 0.0);
      EXPECT_GT(ctrl.shield_decisions(), 0);
    } else {  // the same plan without the shield breaks the budget
      EXPECT_GT(r.sliding_violation_rate, 0.01);
      EXPECT_GT(r.worst_sliding_ratio, 1.005);
      EXPECT_EQ(ctrl.shield_decisions(), 0);
    }
  }
}

TEST(MpcController, ReplansOnTheTwinToItsBestSafeSetting) {
  const sim::Scenario s = grpo_7b();
  auto probe = sim::make_plant(s, 1);
  MpcConfig c = config(probe->info(), true);
  c.replan_s = 300;
  std::vector<MpcPlanEvent> events;
  auto twin = std::make_unique<FixedTwin>(&s);
  FixedTwin* tw = twin.get();
  MpcController ctrl(c, std::move(twin), unsafe_setting(),
                     [&events](const MpcPlanEvent& e) { events.push_back(e); });
  ctrl.reset(probe->info());
  const ActuatorSet claims = ctrl.claims();
  EXPECT_TRUE(claims.test(kCapActuator));
  EXPECT_TRUE(claims.test(static_cast<size_t>(Knob::kGenConcurrency)));
  EXPECT_TRUE(claims.test(static_cast<size_t>(Knob::kGroupSize)));
  const EpisodeResult r = run(s, ctrl, 620);
  EXPECT_EQ(tw->observed, 1240);  // every decision's snapshot
  ASSERT_EQ(events.size(), 2u);   // at 300 s and 600 s
  EXPECT_DOUBLE_EQ(events[0].time_s, 300);
  EXPECT_DOUBLE_EQ(events[0].applied_s, 310);  // plan_delay_s after the replan
  EXPECT_TRUE(events[0].fitted);
  EXPECT_TRUE(events[0].found);
  EXPECT_GT(events[0].episodes, 10);
  // The twin's best safe setting: a cap under the top of the ladder, safe on the twin.
  EXPECT_LT(ctrl.setting().value, 400);
  EXPECT_LE(ctrl.setting().predicted_worst_ratio, 1.0);
  EXPECT_GT(ctrl.setting().predicted_tokens, 0);
  EXPECT_EQ(r.sliding_violation_rate, 0.0);
}

// The search runs on another thread, but its setting takes effect at a fixed time: two runs
// are the same bit for bit, and the same search runs inside the decision with no delay.
TEST(MpcController, OffThreadSearchIsDeterministic) {
  const sim::Scenario s = grpo_7b();
  auto probe = sim::make_plant(s, 1);
  std::vector<EpisodeResult> runs;
  std::vector<double> caps;
  for (double delay : {10.0, 10.0, 0.0}) {
    MpcConfig c = config(probe->info(), true);
    c.replan_s = 200;
    c.plan_delay_s = delay;
    MpcController ctrl(c, std::make_unique<FixedTwin>(&s), unsafe_setting());
    runs.push_back(run(s, ctrl, 450));
    caps.push_back(ctrl.setting().value);
  }
  EXPECT_EQ(runs[0].tokens, runs[1].tokens);
  EXPECT_EQ(runs[0].energy_j, runs[1].energy_j);
  EXPECT_EQ(caps[0], caps[2]);  // the same search, applied 10 s later
}

}  // namespace
}  // namespace fw

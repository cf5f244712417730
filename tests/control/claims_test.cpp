// Claims: a controller declares the actuators it commands; a ControlLoop refuses two
// controllers that claim one actuator, and a composed controller's unclaimed settings are
// dropped.
#include <gtest/gtest.h>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "controllers/threshold_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "controllers/zeus_controller.hpp"
#include "test_plant.hpp"

namespace fw {
namespace {

using testing::FirstOrderPlant;
using testing::one_budget;

constexpr int kGen = static_cast<int>(Knob::kGenConcurrency);
constexpr int kGroup = static_cast<int>(Knob::kGroupSize);

// Sets every job's knobs and every GPU's cap to fixed values, whatever it claims.
class FixedController : public Controller {
 public:
  FixedController(std::string name, ActuatorSet claims, double knob, double cap_w)
      : name_(std::move(name)), claims_(claims), knob_(knob), cap_w_(cap_w) {}
  std::string name() const override { return name_; }
  double period_s() const override { return 1; }
  ActuatorSet claims() const override { return claims_; }
  Command update(const Observation& obs) override {
    Command c = blank_command(*obs.plant);
    for (double& v : c.power_cap_w) v = cap_w_;
    for (KnobValues& k : c.knobs) k.fill(knob_);
    return c;
  }

 private:
  std::string name_;
  ActuatorSet claims_;
  double knob_, cap_w_;
};

TEST(Claims, TwoControllersOnOneActuatorFailAtStart) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  FixedController a("a", only_actuator(kCapActuator), 8, 300);
  FixedController b("b", only_actuator(kCapActuator) | only_actuator(kGen), 8, 200);
  ControlLoop loop(plant, budget, LoopConfig{});
  loop.add_controller(&a);
  loop.add_controller(&b);
  const Status s = loop.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'a' and 'b' both claim actuator 'cap'"), std::string::npos)
      << s.message();
}

TEST(Claims, DisjointControllersComposeAndUnclaimedSettingsAreDropped) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(1000);
  // Each also commands what it does not claim, at values that would win a plain merge.
  FixedController knobs("knobs", only_actuator(kGen), 8, 150);
  FixedController caps("caps", only_actuator(kCapActuator), 4, 300);
  LoopConfig lc;
  lc.duration_s = 5;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&knobs);
  loop.add_controller(&caps);
  ASSERT_TRUE(loop.run().ok());
  EXPECT_EQ(plant.knobs()[kGen], 8);     // from "knobs", not caps' 4
  EXPECT_EQ(plant.knobs()[kGroup], 16);  // claimed by nobody: unchanged
  EXPECT_EQ(plant.caps()[0], 300);       // from "caps", not knobs' 150
}

TEST(Claims, AloneAControllerCommandsWhatItSends) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(1000);
  FixedController only("only", only_actuator(kGen), 8, 300);
  LoopConfig lc;
  lc.duration_s = 5;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&only);
  ASSERT_TRUE(loop.run().ok());
  EXPECT_EQ(plant.knobs()[kGroup], 8);  // its pins pass as before claims existed
  EXPECT_EQ(plant.caps()[0], 300);
}

TEST(Claims, BaselinesDeclareTheirActuators) {
  FirstOrderPlant plant(1);
  EXPECT_EQ(UncontrolledController().claims(), all_actuators());
  ThresholdConfig tc;
  tc.actuator = Actuator::of_index(kGroup);
  EXPECT_EQ(ThresholdController(tc).claims(), only_actuator(kGroup));
  EXPECT_EQ(ZeusController(ZeusConfig{}).claims(), only_actuator(kCapActuator));
  EXPECT_EQ(actuator_set_name(only_actuator(kGen) | only_actuator(kCapActuator)),
            "gen_concurrency+cap");
  EXPECT_EQ(actuator_set_name(ActuatorSet()), "none");

  // Uncontrolled holds everything, so it composes with nothing.
  UncontrolledController u;
  ZeusController z(ZeusConfig{});
  const BudgetSchedule budget = one_budget(300);
  ControlLoop loop(plant, budget, LoopConfig{});
  loop.add_controller(&u);
  loop.add_controller(&z);
  const Status s = loop.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("'uncontrolled' and 'zeus' both claim actuator 'cap'"),
            std::string::npos)
      << s.message();
}

TEST(Claims, ActuatorRowsResolveByAnyOfTheirNames) {
  const FirstOrderPlant plant(1);
  for (const char* name : {"caps", "cap", "power_cap"}) {
    auto a = resolve_actuator(name, plant.info());
    ASSERT_TRUE(a.ok()) << name;
    EXPECT_EQ(a->index(), kCapActuator);
    EXPECT_EQ(a->name(), "caps");  // the flag name, as files and outputs have it
  }
  auto bad = resolve_actuator("nope", plant.info());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("valid: auto, caps, gen_concurrency, group_size"),
            std::string::npos);
}

}  // namespace
}  // namespace fw

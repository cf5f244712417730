// TeacherRecorder (rl/teacher_recorder.hpp): at each student decision it records the PPO
// observation and the teacher's setting as level labels (knobs nearest, the cap at or below
// the lowest commanded until the next decision); with a driver, the driver's command goes out.

#include "rl/teacher_recorder.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "control/control_loop.hpp"
#include "scripted_plant.hpp"

namespace fw::rl {
namespace {

using testing::gpu_budget;
using testing::ScriptedPlant;

// Every 0.5 s: gen_concurrency 14, group_size 13, cap 300 W, but 250 W at t = 1.5 s (a
// shield's dip) and 330 W from t = 6 s on.
class ScriptedTeacher : public Controller {
 public:
  int calls = 0;
  std::string name() const override { return "scripted"; }
  double period_s() const override { return 0.5; }
  void reset(const PlantInfo& info) override { info_ = info; }
  Command update(const Observation& obs) override {
    ++calls;
    Command c;
    c.knobs.assign(1, kNoKnobs);
    c.knobs[0][0] = 14;
    c.knobs[0][1] = 13;
    c.power_cap_w.assign(1, obs.time_s == 1.5 ? 250 : obs.time_s >= 6 ? 330 : 300);
    return c;
  }
  ActuatorSet claims() const override { return all_actuators(); }

 private:
  PlantInfo info_;
};

// Commands gen_concurrency 5 at each call, counting them.
class ScriptedDriver : public Controller {
 public:
  int calls = 0;
  std::string name() const override { return "driver"; }
  double period_s() const override { return 3; }
  Command update(const Observation&) override {
    ++calls;
    Command c;
    c.knobs.assign(1, kNoKnobs);
    c.knobs[0][0] = 5;
    return c;
  }
  ActuatorSet claims() const override { return only_actuator(0); }
};

TEST(TeacherRecorder, LevelHelpers) {
  const KnobRange conc{true, 1, 64, 1}, group{true, 1, 16, 1};
  // Level ladders (docs/rl.md): 1..64 dense: 1 2 3 4 5 6 8 9 10 11 12 13 14 ...; 1..16: 1 2
  // 3 4 5 6 8 10 13 16.
  EXPECT_EQ(nearest_knob_level(conc, 14, 22, true), 12);
  EXPECT_EQ(nearest_knob_level(conc, 7, 22, true), 5);  // 6 and 8 tie: the lower
  EXPECT_EQ(nearest_knob_level(group, 13, 10, false), 8);
  EXPECT_EQ(nearest_knob_level(group, 15, 10, false), 9);
  const GpuInfo a100{"a100", 100, 400, 400, 400};
  EXPECT_EQ(cap_level_at_or_below(a100, 310), 5);  // 300 W
  EXPECT_EQ(cap_level_at_or_below(a100, 320), 6);
  EXPECT_EQ(cap_level_at_or_below(a100, 150), 0);
  EXPECT_EQ(cap_level_at_or_below(a100, 400), 10);
}

TEST(TeacherRecorder, RecordsTheTeachersSettingAtEachStudentDecision) {
  ScriptedPlant plant(12);
  const BudgetSchedule budget = gpu_budget(300);
  ScriptedTeacher teacher;
  ImitationDataset data;
  TeacherRecorder::Config rc;
  rc.student_period_s = 3;
  rc.episode = 7;
  TeacherRecorder rec(teacher, nullptr, rc, data);
  LoopConfig lc;
  lc.duration_s = 12;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&rec);
  ASSERT_TRUE(loop.run().ok());
  rec.finish();
  EXPECT_EQ(teacher.calls, 24);  // every sample
  ASSERT_EQ(data.size(), 4u);    // t = 0, 3, 6, 9
  EXPECT_EQ(data.obs_dim, kPlantObsDim);
  EXPECT_EQ(data.categories, (std::vector<int>{22, 10, 11}));
  const std::vector<int> want = {12, 8, 2,   // the 250 W dip in [0, 3): 240 W
                                 12, 8, 5,   // 300 W
                                 12, 8, 6,   // 330 W: 320 W
                                 12, 8, 6};  // ended by finish()
  EXPECT_EQ(data.labels, want);
  EXPECT_EQ(data.episode, (std::vector<int>(4, 7)));
  // The observation is the one a ppo: controller builds (power / budget: 320 W / 300 W).
  EXPECT_NEAR(data.obs[0], (200 + 10 * 12) / 300.0, 1e-12);
}

TEST(TeacherRecorder, TheDriverCommandsAtDecisionsOnly) {
  ScriptedPlant plant(12);
  const BudgetSchedule budget = gpu_budget(300);
  ScriptedTeacher teacher;
  ScriptedDriver driver;
  ImitationDataset data;
  TeacherRecorder rec(teacher, &driver, {}, data);
  LoopConfig lc;
  lc.duration_s = 12;
  ControlLoop loop(plant, budget, lc);
  loop.add_controller(&rec);
  ASSERT_TRUE(loop.run().ok());
  rec.finish();
  EXPECT_EQ(teacher.calls, 24);
  EXPECT_EQ(driver.calls, 4);
  EXPECT_EQ(data.size(), 4u);
  // The plant follows the driver (5), never the teacher (14).
  Snapshot s;
  ASSERT_TRUE(plant.read(12, s).ok());
  EXPECT_EQ(s.jobs[0].knobs[0], 5);
}

}  // namespace
}  // namespace fw::rl

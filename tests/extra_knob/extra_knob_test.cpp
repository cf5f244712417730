// A throwaway knob, to show what adding an actuator takes. This binary compiles control/ and
// the snapshot and trace writer with FW_TEST_EXTRA_KNOB, which adds one row ("test_knob", per
// job) to kActuatorTable (telemetry/actuator_table.hpp). The only other code written for
// the knob is the model that reacts to it: KnobPlant below. Everything else — snapshot and
// command arrays, name resolution, ladders, the SafetyLimiter (clamp, slew, shield order),
// claims, the command merge and the jobs.csv column — follows from the table.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "control/controller.hpp"
#include "control/plant.hpp"
#include "telemetry/trace_writer.hpp"

#ifndef FW_TEST_EXTRA_KNOB
#error "extra_knob_test.cpp must be built with FW_TEST_EXTRA_KNOB"
#endif

namespace fw {
namespace {

constexpr int kTestKnob = find_actuator("test_knob");
static_assert(kTestKnob == 2 && kNumKnobs == 3 && kCapActuator == 3);

// The model: one GPU whose power is 100 + 20·test_knob W (knob 0..10, step 1); the job
// exposes test_knob only.
class KnobPlant : public Plant {
 public:
  KnobPlant() {
    info_.gpus.push_back({"test-gpu", 100, 400, 400, 400});
    JobInfo j;
    j.name = "job0";
    j.gpus = {0};
    j.knob_ranges[kTestKnob] = {true, 0, 10, 1};
    j.default_knobs[kTestKnob] = 10;
    info_.jobs.push_back(j);
  }
  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override {
    out.time_s = now_s;
    out.gpus.resize(1);
    out.gpus[0].power_w = std::min(cap_w_, 100 + 20 * knob_);
    out.gpus[0].cap_w = cap_w_;
    out.jobs.resize(1);
    out.jobs[0].knobs = kNoKnobs;
    out.jobs[0].knobs[kTestKnob] = knob_;
    return Status::Ok();
  }
  Status write(const Command& cmd) override {
    if (!cmd.knobs.empty() && !std::isnan(cmd.knobs[0][kTestKnob])) {
      knob_ = cmd.knobs[0][kTestKnob];
    }
    if (!cmd.power_cap_w.empty() && !std::isnan(cmd.power_cap_w[0])) cap_w_ = cmd.power_cap_w[0];
    return Status::Ok();
  }
  double knob() const { return knob_; }

 private:
  PlantInfo info_;
  double knob_ = 10, cap_w_ = 400;
};

// Asks for one setting of one actuator every second.
class SetController : public Controller {
 public:
  SetController(Actuator a, double value) : a_(a), value_(value) {}
  std::string name() const override { return "set-" + a_.name(); }
  double period_s() const override { return 1; }
  ActuatorSet claims() const override { return only_actuator(a_.index()); }
  Command update(const Observation& obs) override {
    Command c = blank_command(*obs.plant);
    set_job_setting(*obs.plant, 0, a_, value_, c);
    return c;
  }

 private:
  Actuator a_;
  double value_;
};

BudgetSchedule budget_w(double watts) {
  BudgetSchedule b;
  BudgetSchedule::Entry e;
  e.budget.watts = watts;
  e.budget.window_s = 2;
  b.entries.push_back(e);
  return b;
}

TEST(ExtraKnob, ResolvesLaddersAndIsCommandedThroughTheLimiter) {
  KnobPlant plant;
  auto a = resolve_actuator("test_knob", plant.info());
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->index(), kTestKnob);
  EXPECT_EQ(job_ladder(plant.info(), 0, *a).size(), 11);
  EXPECT_FALSE(resolve_actuator("group_size", plant.info()).ok());  // not exposed

  const BudgetSchedule budget = budget_w(1000);
  LoopConfig lc;
  lc.duration_s = 10;
  LimiterConfig lim;
  lim.max_knob_change_frac = 0.2;  // two steps of 0..10 per decision
  ControlLoop loop(plant, budget, lc, lim);
  SetController set(*a, 3.4);  // clamped to the step: 3
  loop.add_controller(&set);
  ASSERT_TRUE(loop.start().ok());
  ASSERT_TRUE(loop.step().ok());
  EXPECT_EQ(plant.knob(), 8);  // slew: 10 → 8 in one decision
  while (!loop.done()) ASSERT_TRUE(loop.step().ok());
  EXPECT_EQ(plant.knob(), 3);
}

TEST(ExtraKnob, ClaimsConflictOnTheNewKnob) {
  KnobPlant plant;
  const BudgetSchedule budget = budget_w(1000);
  ControlLoop loop(plant, budget, LoopConfig{});
  SetController a(Actuator::of_index(kTestKnob), 1), b(Actuator::of_index(kTestKnob), 2);
  loop.add_controller(&a);
  loop.add_controller(&b);
  const Status s = loop.start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("claim actuator 'test_knob'"), std::string::npos) << s.message();
}

TEST(ExtraKnob, BudgetShieldStepsTheNewKnob) {
  KnobPlant plant;  // 300 W at knob 10, budget 200 W: the shield steps the knob down
  const BudgetSchedule budget = budget_w(200);
  LoopConfig lc;
  lc.duration_s = 30;
  LimiterConfig lim;
  lim.budget_shield = true;
  ControlLoop loop(plant, budget, lc, lim);
  SetController hold(Actuator::of_index(kTestKnob), 10);
  loop.add_controller(&hold);
  ASSERT_TRUE(loop.run().ok());
  EXPECT_LT(plant.knob(), 10);
  EXPECT_GT(loop.limiter().stats().shield_steps, 0);
}

TEST(ExtraKnob, TraceHasAColumnForIt) {
  const auto dir = std::filesystem::temp_directory_path() / "fw_extra_knob_trace";
  std::filesystem::remove_all(dir);
  auto w = TraceWriter::create(dir.string());
  ASSERT_TRUE(w.ok());
  Snapshot s;
  s.gpus.resize(1);
  s.jobs.resize(1);
  s.jobs[0].knobs[kTestKnob] = 7;
  (*w)->append(s);
  ASSERT_TRUE((*w)->close({}).ok());
  std::ifstream in(dir / "jobs.csv");
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header,
            "time_s,job,phase,tokens_total,steps_total,gen_concurrency,group_size,test_knob");
  EXPECT_EQ(row.substr(row.rfind(',')), ",7");
}

}  // namespace
}  // namespace fw

// A throwaway knob, to show what adding an actuator takes. This binary compiles control/, the
// snapshot and trace writer, the simulator's scenario, cluster and workload, the static
// calibration and the PPO features with FW_TEST_EXTRA_KNOB, which adds one row ("test_knob",
// per job) to kActuatorTable (vocab/actuator_table.hpp: name, range keys, default,
// ladder, static pin, feature name) and the simulated GRPO workload's response to it
// (sim/workload.cpp: GRPO jobs respond; SM activity × (0.5 + 0.05·test_knob)). Those two rows
// and this file are all the knob's code. Everything else — the scenario keys and their
// checks, the simulator's knob ranges, reads and writes, name resolution, ladders, the static
// joint grid, the PPO observation entry and level ladder, the SafetyLimiter (clamp, slew,
// shield order), claims, the command merge and the jobs.csv column — follows from the table.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "control/controller.hpp"
#include "control/plant.hpp"
#include "controllers/static_calibration.hpp"
#include "rl/plant_features.hpp"
#include "sim/cluster.hpp"
#include "sim/scenario.hpp"
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
  EXPECT_EQ(plant.knob(), 3);  // a cut passes whole: slew binds raises only (10 → 3)
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

// ---- The table drives the simulator, the static grid and the PPO features ---------------

// One 7B GRPO job on one A100; the test knob's range and setting from the scenario's keys.
Result<sim::Scenario> scenario(const std::vector<std::string>& overrides = {}) {
  return sim::parse_scenario(
      "name: t\n"
      "gpus: [{model: a100-sxm4-80gb}]\n"
      "budget: {watts: 260, scope: job, window_s: 10}\n"
      "jobs:\n"
      "  - {name: j, kind: grpo, model: qwen2.5-7b, gpus: 1, test_knob_max: 8, test_knob: 4}\n",
      "t.yaml", overrides);
}

TEST(ExtraKnobTable, DrivesScenarioKeysAndTheSimulatorsRanges) {
  auto s = scenario();
  ASSERT_TRUE(s.ok()) << s.status().message();
  const sim::JobSpec& j = s->jobs[0];
  EXPECT_EQ(j.knobs[kTestKnob], 4);
  EXPECT_EQ(j.knob_min[kTestKnob], 0);  // the row's default range: 0..10
  EXPECT_EQ(j.knob_max[kTestKnob], 8);
  // The row's bounds check the keys, with file and field in the message.
  auto over = scenario({"jobs.0.test_knob=9"});  // above test_knob_max
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("jobs.0.test_knob"), std::string::npos)
      << over.status().message();
  EXPECT_FALSE(scenario({"jobs.0.test_knob_max=101"}).ok());  // above the row's hi (100)
  EXPECT_FALSE(scenario({"jobs.0.test_knob=2.5"}).ok());      // whole settings only
  // meta.json's parameters list the knob and its range.
  const nlohmann::json meta = s->to_json();
  EXPECT_EQ(meta["jobs"][0]["knobs"]["test_knob"], 4) << meta["jobs"][0].dump();
  EXPECT_EQ(meta["jobs"][0]["knob_ranges"]["test_knob"], nlohmann::json({0.0, 8.0}));

  // The cluster declares the range (step: the row's ladder step), reads and writes the knob.
  auto plant = sim::make_cluster(*s, 1);
  const JobInfo& ji = plant->info().jobs[0];
  ASSERT_TRUE(ji.knob_ranges[kTestKnob].available);
  EXPECT_EQ(ji.knob_ranges[kTestKnob].max, 8);
  EXPECT_EQ(ji.knob_ranges[kTestKnob].step, 2);
  EXPECT_EQ(ji.default_knobs[kTestKnob], 4);
  Snapshot snap;
  ASSERT_TRUE(plant->read(1, snap).ok());
  EXPECT_EQ(snap.jobs[0].knobs[kTestKnob], 4);
  Command c = blank_command(plant->info());
  c.knobs[0][kTestKnob] = 99.4;  // clamped to the job's range
  ASSERT_TRUE(plant->write(c).ok());
  ASSERT_TRUE(plant->read(2, snap).ok());
  EXPECT_EQ(snap.jobs[0].knobs[kTestKnob], 8);
}

TEST(ExtraKnobTable, TheWorkloadResponds) {
  // Mean power of the job at two settings of the knob: the response in sim/workload.cpp.
  auto mean_w = [](const char* setting) {
    auto s = scenario({std::string("jobs.0.test_knob=") + setting});
    if (!s.ok()) {
      ADD_FAILURE() << s.status().message();
      return 0.0;
    }
    auto plant = sim::make_cluster(*s, 3);
    Snapshot snap;
    double sum = 0;
    const int n = 240;
    for (int k = 1; k <= n; ++k) {
      EXPECT_TRUE(plant->read(0.5 * k, snap).ok());
      sum += snap.gpus[0].power_w;
    }
    return sum / n;
  };
  const double lo = mean_w("0"), hi = mean_w("8");
  EXPECT_LT(lo, hi - 10) << lo << " W vs " << hi << " W";
}

TEST(ExtraKnobTable, DrivesTheStaticGrid) {
  auto s = scenario();
  ASSERT_TRUE(s.ok());
  auto plant = sim::make_cluster(*s, 1);
  // "all" and name lists resolve it; its ladder is the row's step over the scenario's range.
  auto all = resolve_actuators("all", plant->info());
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(std::any_of(all->begin(), all->end(),
                          [](const Actuator& a) { return a.index() == kTestKnob; }));
  auto acts = resolve_actuators("test_knob+caps", plant->info());
  ASSERT_TRUE(acts.ok()) << acts.status().message();
  const Ladder l = job_ladder(plant->info(), 0, (*acts)[0]);
  ASSERT_EQ(l.size(), 5);  // 0, 2, 4, 6, 8
  EXPECT_EQ(l.value(1), 2);

  // The joint search walks that ladder with the cap as the inner actuator.
  const sim::Scenario sc = *s;
  const PlantFactory make = [sc](uint64_t seed) -> std::unique_ptr<Plant> {
    return sim::make_plant(sc, seed);
  };
  JointCalibrationConfig jc;
  jc.base.seeds = {11};
  jc.base.duration_s = 120;
  jc.base.sample_period_s = 0.5;
  jc.actuators = *acts;
  jc.refine = false;
  auto j = calibrate_static_joint(make, sc.budget, jc);
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ(j->inner.index(), kCapActuator);
  EXPECT_EQ(j->grid, 5);
  EXPECT_TRUE(j->found);
  const double best = j->hold[kTestKnob];
  EXPECT_TRUE(best == 0 || best == 2 || best == 4 || best == 6 || best == 8) << best;
}

// Captures job 0's PPO observation at each decision.
class FeatureProbe : public Controller {
 public:
  std::string name() const override { return "probe"; }
  double period_s() const override { return 1; }
  ActuatorSet claims() const override { return ActuatorSet(); }
  Command update(const Observation& obs) override {
    features.assign(rl::kPlantObsDim, -1);
    rl::build_plant_features(obs, 0, features);
    return blank_command(*obs.plant);
  }
  std::vector<double> features;
};

TEST(ExtraKnobTable, DrivesThePpoFeaturesAndLevels) {
  // The observation gains the row's feature after the other knobs' entries.
  const rl::ObsSpec& spec = rl::plant_obs_spec();
  ASSERT_EQ(rl::kPlantObsDim, 21);
  ASSERT_EQ(spec.dim(), rl::kPlantObsDim);
  EXPECT_EQ(spec.names[rl::kObsKnobBase + 2], "test_knob_frac");
  EXPECT_EQ(spec.names[rl::kObsKnobBase + 3], "phase_generate");

  auto s = scenario();
  ASSERT_TRUE(s.ok());
  auto plant = sim::make_cluster(*s, 1);
  LoopConfig lc;
  lc.duration_s = 3;
  ControlLoop loop(*plant, s->budget, lc);
  FeatureProbe probe;
  loop.add_controller(&probe);
  ASSERT_TRUE(loop.run().ok());
  ASSERT_EQ(probe.features.size(), 21u);
  EXPECT_DOUBLE_EQ(probe.features[rl::kObsKnobBase + 2], 0.5);  // 4 on 0..8

  // The level action has the row's 6 levels; a level sets the knob on its ladder.
  EXPECT_EQ(rl::kKnobLevels[kTestKnob], 6);
  const unsigned mask = 1u << kTestKnob;
  EXPECT_EQ(rl::plant_action_spec(rl::KnobActionMode::kLevel, mask).categories,
            std::vector<int>{6});
  auto parsed = rl::parse_knob_mask("test_knob");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, mask);
  Snapshot snap;
  ASSERT_TRUE(plant->read(4, snap).ok());
  Command c = blank_command(plant->info());
  const double level0[] = {0};
  EXPECT_EQ(
      rl::apply_knob_action(plant->info(), snap, 0, level0, c, rl::KnobActionMode::kLevel, mask),
      1);
  EXPECT_EQ(c.knobs[0][kTestKnob], 0);
}

}  // namespace
}  // namespace fw

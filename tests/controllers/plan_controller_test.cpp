// The `plan` controller (controllers/plan_controller.hpp): stages= parsing, the stage → GPU
// mapping (explicit, or the job's GPUs in registration order cut into blocks), caps per GPU
// (null: the GPU's default cap), nothing written when the job cannot be split, and caps outside
// the GPU's range left to the SafetyLimiter, which clamps and counts them.

#include "controllers/plan_controller.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "control/safety_limiter.hpp"
#include "control/snapshot_ring.hpp"

namespace fw {
namespace {

PlantInfo node(int n_gpus, std::vector<int> job_gpus) {
  PlantInfo info;
  for (int g = 0; g < n_gpus; ++g) info.gpus.push_back({"a100-sxm4-80gb", 100, 400, 350, 400});
  JobInfo j;
  j.name = "pp";
  j.kind = "pipeline";
  j.gpus = std::move(job_gpus);
  info.jobs.push_back(j);
  return info;
}

PlanCapsController make(std::vector<double> caps, std::vector<std::vector<int>> stage_gpus = {}) {
  PlanCapsConfig c;
  c.stage_caps_w = std::move(caps);
  c.stage_gpus = std::move(stage_gpus);
  auto r = PlanCapsController::create(c);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(PlanStageGpus, ParsesRangesAndLists) {
  auto a = parse_stage_gpus("0-1:2-3", 2, 4);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  auto b = parse_stage_gpus("0+4:1+5:2+6:3+7", 4, 8);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*b, (std::vector<std::vector<int>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  auto c = parse_stage_gpus("3:0-2+5", 2, 6);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(*c, (std::vector<std::vector<int>>{{3}, {0, 1, 2, 5}}));
}

TEST(PlanStageGpus, RefusesNamingTheOption) {
  const std::pair<const char*, const char*> bad[] = {
      {"0-1:2-8", "GPU 8: the plant has 8 GPUs"},  // n_gpus 8
      {"0-1:1-2", "GPU 1 is in more than one stage"},
      {"0-1", "1 stages listed; the plan has 2"},
      {"0-1:2-3:4", "3 stages listed; the plan has 2"},
      {"a:b", "'a' is not a GPU index"},
      {"0-1:", "'' is not a GPU index"},
      {"3-1:0", "'3-1' is not a GPU index"},
      {"-1:0", "is not a GPU index"},
  };
  for (const auto& [text, why] : bad) {
    auto r = parse_stage_gpus(text, 2, 8);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.status().message().rfind(std::string("stages=") + text + ": ", 0), 0u)
        << r.status().message();
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
  }
}

TEST(PlanController, JobGpusInRegistrationOrderInBlocks) {
  // The job listed its GPUs 4-7 first: stage 0 runs GPUs 4 and 5.
  PlanCapsController c = make({200, 250, 300, 350});
  c.reset(node(8, {4, 5, 6, 7, 0, 1, 2, 3}));
  ASSERT_TRUE(c.mapping().ok()) << c.mapping().message();
  EXPECT_EQ(c.gpu_stage(), (std::vector<int>{2, 2, 3, 3, 0, 0, 1, 1}));
  const Command cmd = c.update(Observation{});
  EXPECT_EQ(cmd.power_cap_w, (std::vector<double>{300, 300, 350, 350, 200, 200, 250, 250}));
}

// A pipeline across nodes: the job registered its GPUs' stages, and this node runs stages 5
// and 6 of an 8-stage plan on its 4 GPUs: each GPU gets its own stage's cap. A stage outside
// the plan writes nothing, saying why.
TEST(PlanController, RegisteredStagesGiveThisNodesShare) {
  PlanCapsController c = make({100, 110, 120, 130, 140, 150, 160, 170});
  PlantInfo info = node(4, {2, 3, 0, 1});
  info.jobs[0].pipeline_stages = {6, 6, 5, 5};
  c.reset(info);
  ASSERT_TRUE(c.mapping().ok()) << c.mapping().message();
  EXPECT_EQ(c.gpu_stage(), (std::vector<int>{5, 5, 6, 6}));
  EXPECT_EQ(c.update(Observation{}).power_cap_w, (std::vector<double>{150, 150, 160, 160}));
  info.jobs[0].pipeline_stages = {6, 6, 5, 8};
  c.reset(info);
  EXPECT_FALSE(c.mapping().ok());
  EXPECT_NE(c.mapping().message().find("pipeline stage 8; the plan has 8 stages"),
            std::string::npos)
      << c.mapping().message();
  EXPECT_TRUE(c.update(Observation{}).power_cap_w.empty());
}

TEST(PlanController, ExplicitStagesAndGpusOutsideThePlan) {
  PlanCapsController c = make({210, 220}, {{0, 2}, {1}});
  c.reset(node(4, {0, 1, 2, 3}));
  ASSERT_TRUE(c.mapping().ok());
  const Command cmd = c.update(Observation{});
  ASSERT_EQ(cmd.power_cap_w.size(), 4u);
  EXPECT_EQ(cmd.power_cap_w[0], 210);
  EXPECT_EQ(cmd.power_cap_w[1], 220);
  EXPECT_EQ(cmd.power_cap_w[2], 210);
  EXPECT_TRUE(std::isnan(cmd.power_cap_w[3]));  // in no stage: unchanged
}

TEST(PlanController, UncappedStageGetsTheDefaultCap) {
  PlanCapsController c = make({kUnset, 180});
  c.reset(node(2, {0, 1}));
  const Command cmd = c.update(Observation{});
  EXPECT_EQ(cmd.power_cap_w, (std::vector<double>{350, 180}));  // default_cap_w 350
}

TEST(PlanController, WritesNothingWhenTheJobCannotBeSplit) {
  PlanCapsController c = make({200, 250, 300, 350});
  c.reset(node(8, {0, 1, 2, 3, 4, 5}));
  EXPECT_FALSE(c.mapping().ok());
  EXPECT_NE(c.mapping().message().find("6 GPUs, not a multiple of the plan's 4 stages"),
            std::string::npos)
      << c.mapping().message();
  EXPECT_TRUE(c.update(Observation{}).power_cap_w.empty());
  // An explicit GPU the plant lost: nothing either.
  PlanCapsController d = make({200, 250}, {{0}, {5}});
  d.reset(node(4, {0, 1, 2, 3}));
  EXPECT_FALSE(d.mapping().ok());
  EXPECT_TRUE(d.update(Observation{}).power_cap_w.empty());
  // The job comes back whole: reset() maps it again.
  c.reset(node(8, {0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_TRUE(c.mapping().ok());
  EXPECT_EQ(c.update(Observation{}).power_cap_w.size(), 8u);
}

TEST(PlanController, RefusesBadConfigs) {
  PlanCapsConfig c;
  EXPECT_FALSE(PlanCapsController::create(c).ok());  // no stage
  c.stage_caps_w = {200, -1};
  EXPECT_FALSE(PlanCapsController::create(c).ok());
  c.stage_caps_w = {200, 300};
  c.stage_gpus = {{0}};
  EXPECT_FALSE(PlanCapsController::create(c).ok());
  c.stage_gpus = {};
  c.period_s = 0;
  EXPECT_FALSE(PlanCapsController::create(c).ok());
}

TEST(PlanController, TheLimiterClampsCapsOutsideTheRange) {
  // A plan made for a GPU with a higher limit (450 W) and a stage below the range (60 W).
  PlanCapsController c = make({450, 60});
  const PlantInfo info = node(2, {0, 1});
  c.reset(info);
  const Command req = c.update(Observation{});
  EXPECT_EQ(req.power_cap_w, (std::vector<double>{450, 60}));  // as planned: not its job
  Snapshot first;
  first.gpus.resize(2);
  for (GpuReading& g : first.gpus) g.cap_w = 300;  // in force: neither cap is a no-op
  first.jobs.resize(1);
  SafetyLimiter lim;
  lim.reset(info, first);
  Observation obs;
  obs.time_s = 1;
  obs.plant = &info;
  const Command out = lim.apply(req, obs);
  EXPECT_EQ(out.power_cap_w, (std::vector<double>{400, 100}));
  EXPECT_EQ(lim.stats().clamped, 2);
}

}  // namespace
}  // namespace fw

namespace fw {
namespace {

// A step-keyed schedule (plan_controller.hpp): stage 0 at 300 W for the first half of each
// iteration and 200 W for the second, stage 1 constant. Leads 0 unless a test sets them.
PlanCapsConfig scheduled(double lead_up_s = 0, double lead_down_s = 0) {
  PlanCapsConfig c;
  c.stage_caps_w = {250, 260};
  c.schedule = {{{300, 0.0}, {200, 0.5}}, {{260, 0.0}}};
  c.period_s = 0.5;
  c.lead_up_s = lead_up_s;
  c.lead_down_s = lead_down_s;
  return c;
}

// Drives the controller with a job stepping every step_s from t = 0, read every 0.5 s; the job
// announces its step's age (`aged`, as the agent's job channel carries it) or only its count.
struct StepRun {
  PlanCapsController ctl;
  PlantInfo info = node(2, {0, 1});
  SnapshotRing ring{4};
  double step_s;
  bool aged;
  double stall_s = 1e18;  // the job stops stepping here
  Command at(double t) {
    Snapshot s;
    s.time_s = t;
    JobReading j;
    j.phase = Phase::kForward;
    j.steps_total = std::floor(std::min(t, stall_s) / step_s);
    if (aged) j.step_age_s = t - j.steps_total * step_s;
    s.jobs.push_back(j);
    ring.push(s);
    Observation o;
    o.time_s = t;
    o.sample_period_s = 0.5;
    o.plant = &info;
    o.history = &ring;
    return ctl.update(o);
  }
};

StepRun run_of(const PlanCapsConfig& cfg, double step_s, bool aged) {
  auto c = PlanCapsController::create(cfg);
  EXPECT_TRUE(c.ok()) << c.status().message();
  StepRun r{*c, node(2, {0, 1}), SnapshotRing(4), step_s, aged};
  r.ctl.reset(r.info);
  return r;
}

TEST(PlanSchedule, FollowsTheSegmentsFromTheJobsStepBoundaries) {
  StepRun r = run_of(scheduled(), 10, true);
  // Before two boundaries the step time is unknown: the constant caps.
  Command c = r.at(0.25);
  EXPECT_EQ(c.power_cap_w, (std::vector<double>{250, 260}));
  EXPECT_FALSE(r.ctl.following().ok());
  for (double t = 0.75; t < 10.3; t += 0.5) r.at(t);
  EXPECT_NEAR(r.ctl.step_s(), 10, 1e-9);
  ASSERT_TRUE(r.ctl.following().ok()) << r.ctl.following().message();
  // 10.75 s: 0.75 s into the second step, the first half: 300 W; 16.25 s: the second half.
  EXPECT_EQ(r.at(10.75).power_cap_w, (std::vector<double>{300, 260}));
  for (double t = 11.25; t < 16; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(16.25).power_cap_w, (std::vector<double>{200, 260}));
}

// Without the step's age the boundary is placed half a sample period back (the simulator's
// jobs, which report only their count): the same segments, found from the count.
TEST(PlanSchedule, AnchorsOnTheStepCountWithoutTheAge) {
  StepRun r = run_of(scheduled(), 10, false);
  for (double t = 0.25; t < 20.3; t += 0.5) r.at(t);
  ASSERT_TRUE(r.ctl.following().ok()) << r.ctl.following().message();
  EXPECT_NEAR(r.ctl.step_s(), 10, 1e-9);
  EXPECT_EQ(r.at(20.75).power_cap_w, (std::vector<double>{300, 260}));
  for (double t = 21.25; t < 27; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(27.25).power_cap_w, (std::vector<double>{200, 260}));
}

// A raise is written lead_up_s before its segment, a lowering lead_down_s before: at 3.25 s
// before the iteration's end (lead 4 s) the next iteration's 300 W is already in force.
TEST(PlanSchedule, RaisesLeadLoweringsByTheirSettlingTimes) {
  StepRun r = run_of(scheduled(4, 1), 10, true);
  for (double t = 0.25; t < 10.3; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(14.25).power_cap_w[0], 200);  // 4.25 + 1 s: the lowering at 5 s is written
  for (double t = 14.75; t < 15.7; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(15.75).power_cap_w[0], 200);
  for (double t = 16.25; t < 16.4; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(16.75).power_cap_w[0], 300);  // 6.75 + 4 s reaches the next iteration
}

// Segments shorter than min_segment_s at the job's step time (a plan made for a slower job),
// or a stale boundary (the job stalled), fall back to the constant caps, saying why.
TEST(PlanSchedule, FallsBackToConstantCapsWhenSegmentsAreTooShortOrTheStepIsStale) {
  StepRun fast = run_of(scheduled(), 4, true);  // segments of 2 s < 2.2 s
  for (double t = 0.25; t < 8.5; t += 0.5) fast.at(t);
  EXPECT_EQ(fast.at(8.75).power_cap_w, (std::vector<double>{250, 260}));
  EXPECT_NE(fast.ctl.following().message().find("min_segment_s"), std::string::npos)
      << fast.ctl.following().message();
  StepRun r = run_of(scheduled(), 10, true);
  for (double t = 0.25; t < 10.8; t += 0.5) r.at(t);
  ASSERT_TRUE(r.ctl.following().ok());
  r.stall_s = 11;  // the job stops stepping: its boundary ages
  for (double t = 11.25; t < 31; t += 0.5) r.at(t);
  EXPECT_EQ(r.at(31.25).power_cap_w, (std::vector<double>{250, 260}));
  EXPECT_FALSE(r.ctl.following().ok());
}

TEST(PlanSchedule, RefusesBadSchedules) {
  PlanCapsConfig c = scheduled();
  c.schedule = {{{300, 0.5}, {200, 0.2}}, {{260, 0}}};
  EXPECT_FALSE(PlanCapsController::create(c).ok());  // out of order
  c = scheduled();
  c.schedule.pop_back();
  EXPECT_FALSE(PlanCapsController::create(c).ok());  // a stage missing
  c = scheduled(0.1, 0.2);
  EXPECT_FALSE(PlanCapsController::create(c).ok());  // lead_down_s > lead_up_s
  c = scheduled();
  c.schedule[0][1].start_frac = 1;
  EXPECT_FALSE(PlanCapsController::create(c).ok());
}

}  // namespace
}  // namespace fw

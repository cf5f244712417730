// The pipeline planner: the 1F1B critical path, the stage-profile reader's checks, the
// cap -> clock mapping and hand-computed plans (the search against exhaustive search, the cap
// range, segment lengths and the frontier: plan_search_test.cpp).

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/planner.hpp"
#include "pipeline/stage_profile.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::pipeline {
namespace {

OpDurations uniform(int stages, double f, double b) {
  OpDurations d(static_cast<size_t>(stages));
  for (auto& s : d) {
    s[0].fill(f);
    s[1].fill(b);
  }
  return d;
}

TEST(OneFOneB, TwoStagesTwoMicrobatchesByHand) {
  // Stage 0: F0 [0,1], F1 [1,2], B0 [4,6], B1 [7,9]; stage 1: F0 [1,2], B0 [2,4], F1 [4,5],
  // B1 [5,7]. The iteration ends at 9.
  OneFOneB dag(2, 2);
  std::vector<double> scratch;
  EXPECT_DOUBLE_EQ(dag.iteration_time(uniform(2, 1, 2), scratch), 9);
  EXPECT_EQ(dag.count(0, Instr::kForward, Phase::kFill), 1);
  EXPECT_EQ(dag.count(0, Instr::kForward, Phase::kSteady), 1);
  EXPECT_EQ(dag.count(0, Instr::kBackward, Phase::kDrain), 1);
  EXPECT_EQ(dag.count(1, Instr::kForward, Phase::kSteady), 2);
  EXPECT_EQ(dag.count(1, Instr::kForward, Phase::kFill), 0);
}

TEST(OneFOneB, OrderIsTopologicalAndCountsAddUp) {
  OneFOneB dag(8, 12);
  ASSERT_EQ(dag.ops().size(), 8u * 12u * 2u);
  for (size_t i = 0; i < dag.ops().size(); ++i) {
    EXPECT_LT(dag.ops()[i].prev, static_cast<int>(i));
    EXPECT_LT(dag.ops()[i].dep, static_cast<int>(i));
  }
  for (int s = 0; s < 8; ++s) {
    int f = 0, b = 0;
    for (int p = 0; p < kPhases; ++p) {
      f += dag.count(s, Instr::kForward, static_cast<Phase>(p));
      b += dag.count(s, Instr::kBackward, static_cast<Phase>(p));
    }
    EXPECT_EQ(f, 12);
    EXPECT_EQ(b, 12);
    EXPECT_EQ(dag.count(s, Instr::kForward, Phase::kWarmup), std::max(0, 8 - 1 - s - 1));
  }
}

TEST(OneFOneB, BalancedPipelineTime) {
  // Balanced stages: (S - 1 + N) * (F + B), the textbook 1F1B iteration time.
  for (int n : {1, 3, 12}) {
    OneFOneB dag(4, n);
    std::vector<double> scratch;
    EXPECT_NEAR(dag.iteration_time(uniform(4, 1, 2), scratch), (4 - 1 + n) * 3.0, 1e-12) << n;
  }
}

// ---- stage profiles ---------------------------------------------------------------------

std::string write_tmp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "fw_pipeline_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text) {
  auto r = read_stage_profile(write_tmp("bad.csv", text));
  return r.ok() ? "" : r.status().message();
}

TEST(StageProfile, ReadsAndSortsByClock) {
  auto r = read_stage_profile(write_tmp(
      "ok.csv",
      "stage,instruction,frequency,time,energy\n0,forward,900,2,100\n0,forward,1000,1,120\n"
      "0,backward,1000,2,240\n"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->num_stages(), 1);
  ASSERT_EQ(r->at(0, Instr::kForward).points.size(), 2u);
  EXPECT_EQ(r->at(0, Instr::kForward).points[0].freq_mhz, 1000);
  EXPECT_DOUBLE_EQ(r->at(0, Instr::kForward).points[0].power_w(), 120);
}

TEST(StageProfile, BadInputNamesFileLineAndField) {
  const std::string h = "stage,instruction,frequency,time,energy\n";
  EXPECT_NE(error_of("stage,instruction,frequency,energy\n0,forward,1,1,1\n")
                .find("bad.csv:1: time: column missing"),
            std::string::npos);
  EXPECT_NE(error_of(h + "0,forward,1000,x,1\n").find("bad.csv:2: time: not a number: 'x'"),
            std::string::npos);
  EXPECT_NE(error_of(h + "0,sideways,1000,1,1\n").find("bad.csv:2: instruction: 'sideways'"),
            std::string::npos);
  EXPECT_NE(error_of(h + "0,forward,1000,1,1\n0,backward,1000,-1,1\n")
                .find("bad.csv:3: time: must be positive"),
            std::string::npos);
  EXPECT_NE(error_of(h + "a,forward,1000,1,1\n").find("bad.csv:2: stage: not a stage index"),
            std::string::npos);
  EXPECT_NE(error_of(h + "0,forward,1000,1,1\n0,forward,1000,2,1\n")
                .find("bad.csv:3: frequency: stage 0 forward at 1000 MHz repeats line 2"),
            std::string::npos);
  EXPECT_NE(error_of(h + "0,forward,1000,1,1\n0,backward,1000,1,1\n2,forward,1000,1,1\n")
                .find("stage 1 has no forward rows"),
            std::string::npos);
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
}

// ---- plans ------------------------------------------------------------------------------

// One stage, two clocks: 1000 MHz (F 1 s 100 J, B 2 s 200 J: 100 W), 500 MHz (F 1.5 s 60 J,
// B 3 s 120 J: 40 W).
StageProfile two_clock_stage() {
  auto p = make_stage_profile({{0, Instr::kForward, 1000, 1, 100},
                               {0, Instr::kBackward, 1000, 2, 200},
                               {0, Instr::kForward, 500, 1.5, 60},
                               {0, Instr::kBackward, 500, 3, 120}},
                              "test");
  EXPECT_TRUE(p.ok());
  return *p;
}

PlanOptions opts(int mb, int global, double slowdown, double straggler = 1) {
  PlanOptions o;
  o.microbatches = mb;
  o.global_batch = global;
  o.tp = 1;
  o.slowdown_max = slowdown;
  o.straggler_factor = straggler;
  o.blocking_w = 10;
  return o;
}

TEST(Plan, OneStageByHand) {
  // N = 2: uncapped 6 s, 600 J; at the 40 W cap 9 s, 360 J.
  auto tight = plan_pipeline(two_clock_stage(), opts(2, 2, 0.1));
  ASSERT_TRUE(tight.ok());
  EXPECT_DOUBLE_EQ(tight->baseline_time_s, 6);
  EXPECT_DOUBLE_EQ(tight->baseline_energy_j, 600);
  EXPECT_NEAR(tight->best().energy_saved, 0, 1e-12);
  EXPECT_TRUE(tight->constant.stages[0][0].uncapped);
  auto loose = plan_pipeline(two_clock_stage(), opts(2, 2, 0.6));
  ASSERT_TRUE(loose.ok());
  EXPECT_NEAR(loose->constant.energy_saved, 0.4, 1e-12);
  EXPECT_NEAR(loose->constant.time_increase, 0.5, 1e-12);
  EXPECT_FALSE(loose->constant.stages[0][0].uncapped);
  EXPECT_DOUBLE_EQ(loose->constant.stages[0][0].cap_w, 40);
  EXPECT_EQ(loose->constant.stages[0][0].forward_mhz, 500);
}

// A schedule whose segments all hold one setting never switches: its shortest switching
// segment is 0 (the planner's contract), not the length of one of its segments (the held-out
// Bloom A40 profile at equal time: two uncapped segments on stage 0 reported 2.29 s).
TEST(Plan, AScheduleThatNeverSwitchesHasNoShortestSegment) {
  auto prof = read_stage_profile(std::string(FLEXWATT_SOURCE_DIR) +
                                 "/data/perseus/validation/stage_profile_bloom+a40_bf16.csv");
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  PlanOptions o;
  o.microbatches = 24;
  o.slowdown_max = 0;
  o.blocking_w = 70.38;  // the A40's, hw/gpu_catalog
  o.min_cap_w = 100;
  o.max_cap_w = 300;
  o.min_segment_s = kCapSettlingS;
  auto p = plan_pipeline(*prof, o);
  ASSERT_TRUE(p.ok()) << p.status().message();
  bool switches = false;
  for (const auto& stage : p->schedule.segments) {
    for (const PlanSegment& seg : stage) {
      switches |= seg.set.uncapped != stage[0].set.uncapped || seg.set.cap_w != stage[0].set.cap_w;
    }
  }
  ASSERT_FALSE(switches) << "the equal-time plan of this profile saves nothing";
  ASSERT_GT(p->schedule.segments[0].size(), 1u);  // several segments, one setting
  EXPECT_EQ(p->schedule.shortest_segment_s, 0);
}

TEST(Plan, StragglerByHand) {
  // Two pipelines, one 1.5x slower (9 s, 900 J); the other slows to 9 s (360 J) instead of
  // blocking 3 s at 10 W after 600 J: (900 + 360) / (900 + 630).
  auto p = plan_pipeline(two_clock_stage(), opts(2, 4, 0, 1.5));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->pipelines, 2);
  EXPECT_DOUBLE_EQ(p->baseline_energy_j, 1530);
  EXPECT_NEAR(p->constant.energy_j, 1260, 1e-9);
  EXPECT_NEAR(p->constant.energy_saved, 1 - 1260.0 / 1530.0, 1e-12);
  EXPECT_NEAR(p->constant.time_increase, 0, 1e-12);
}

TEST(Plan, CapAllowsTheHighestClockWhosePowerFits) {
  // Power is not monotone in clock: 1000 MHz 100 W, 900 MHz 110 W, 800 MHz 60 W. A cap of
  // 100 W allows 1000 MHz; the next level down is 60 W (800 MHz): 900 MHz is never chosen.
  auto prof = make_stage_profile({{0, Instr::kForward, 1000, 1, 100},
                                  {0, Instr::kForward, 900, 1.1, 121},
                                  {0, Instr::kForward, 800, 1.25, 75},
                                  {0, Instr::kBackward, 1000, 1, 100},
                                  {0, Instr::kBackward, 900, 1.1, 121},
                                  {0, Instr::kBackward, 800, 1.25, 75}},
                                 "test");
  ASSERT_TRUE(prof.ok());
  auto p = plan_pipeline(*prof, opts(1, 1, 0.5));
  ASSERT_TRUE(p.ok());
  const CapSetting& c = p->constant.stages[0][0];
  EXPECT_FALSE(c.uncapped);
  EXPECT_DOUBLE_EQ(c.cap_w, 60);
  EXPECT_EQ(c.forward_mhz, 800);
  EXPECT_NEAR(p->constant.energy_saved, 1 - 150.0 / 200.0, 1e-12);
}

TEST(Plan, RejectsBadOptions) {
  auto prof = two_clock_stage();
  EXPECT_FALSE(plan_pipeline(prof, opts(0, 2, 0)).ok());
  EXPECT_FALSE(plan_pipeline(prof, opts(3, 4, 0)).ok());  // 4 is not a multiple of 3
  EXPECT_FALSE(plan_pipeline(prof, opts(2, 2, 0, 0.5)).ok());
  PlanOptions o = opts(2, 2, 0);
  o.blocking_w = 0;
  EXPECT_FALSE(plan_pipeline(prof, o).ok());
  o = opts(2, 2, 0);
  o.min_segment_s = -1;
  EXPECT_FALSE(plan_pipeline(prof, o).ok());
}

}  // namespace
}  // namespace fw::pipeline

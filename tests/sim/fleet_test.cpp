// Fleet start strategies (sim/fleet_start.hpp), the generation-only GRPO mode, and the
// fleet-16xa100 figures of docs/sources.md §1a [2nd] (simulated vs published, printed as
// [fleet] lines): 30 s peak as a share of nameplate per start strategy, with and without the
// fleet controller (control/fleet_controller.hpp), and fleet violation rates per window.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "analysis/windows.hpp"
#include "control/control_loop.hpp"
#include "controllers/fleet_controller.hpp"
#include "sim/fleet_start.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

const char* kFleet = "scenarios/fleet-16xa100.yaml";

TEST(FleetStart, StaggerFractionsSpreadTheBiggestJobsFirst) {
  const Scenario s = testing::load_or_die(kFleet);
  // Jobs: 2×72B (4 GPUs), 2×14B (2), 4×7B (1): van der Corput by size.
  const std::vector<double> f = stagger_fractions(s.jobs);
  const std::vector<double> want = {0, 0.5, 0.25, 0.75, 0.125, 0.625, 0.375, 0.875};
  ASSERT_EQ(f.size(), want.size());
  for (size_t j = 0; j < f.size(); ++j) EXPECT_DOUBLE_EQ(f[j], want[j]) << j;
}

TEST(FleetStart, OffsetsPerStrategyAreAsSpecifiedAndDeterministic) {
  const Scenario s = testing::load_or_die(kFleet);
  std::vector<double> period;
  for (const auto& j : s.jobs) {
    period.push_back(estimate_step_period_s(j, s.sim.dt_s));
    EXPECT_GT(period.back(), 5) << j.name;
    EXPECT_EQ(period.back(), estimate_step_period_s(j, s.sim.dt_s)) << "deterministic";
  }
  const double dt = s.sim.dt_s;
  for (double o : start_offsets_s(s.jobs, StartStrategy::kAligned, dt, 1)) EXPECT_EQ(o, 0);
  const auto f = stagger_fractions(s.jobs);
  const auto st = start_offsets_s(s.jobs, StartStrategy::kStaggered, dt, 1);
  for (size_t j = 0; j < st.size(); ++j) EXPECT_DOUBLE_EQ(st[j], f[j] * period[j]);
  EXPECT_EQ(st, start_offsets_s(s.jobs, StartStrategy::kStaggered, dt, 2));  // seed-free
  const auto r1 = start_offsets_s(s.jobs, StartStrategy::kRandom, dt, 1);
  EXPECT_EQ(r1, start_offsets_s(s.jobs, StartStrategy::kRandom, dt, 1));
  EXPECT_NE(r1, start_offsets_s(s.jobs, StartStrategy::kRandom, dt, 2));
  for (size_t j = 0; j < r1.size(); ++j) {
    EXPECT_GE(r1[j], 0);
    EXPECT_LT(r1[j], period[j]);
  }
  // The cluster runs with the resolved offsets; manual keeps each job's own.
  auto sc = load_scenario(testing::source_path(kFleet), {"fleet.start=random"});
  ASSERT_TRUE(sc.ok());
  auto c = make_cluster(*sc, 1);
  for (size_t j = 0; j < r1.size(); ++j) EXPECT_EQ(c->job_spec(j).start_offset_s, r1[j]);
  auto m = load_scenario(testing::source_path(kFleet),
                         {"fleet.start=manual", "jobs.3.start_offset_s=12.5"});
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(make_cluster(*m, 1)->job_spec(3).start_offset_s, 12.5);
  EXPECT_EQ(make_cluster(*m, 1)->job_spec(2).start_offset_s, 0);
}

TEST(FleetStart, AnOffsetJobIsTheSameJobFurtherOn) {
  const Scenario s = testing::load_or_die("scenarios/grpo-7b-a100.yaml");
  JobSpec spec = s.jobs[0];
  const double dt = s.sim.dt_s;
  WorkloadState a, b;
  a.rng = b.rng = Rng::stream(3, "x");
  start_job(spec, a, dt);
  for (int k = 0; k < 371; ++k) advance_job(spec, a, dt, 1.0);
  spec.start_offset_s = 37.1;
  start_job(spec, b, dt);
  EXPECT_EQ(a.phase, b.phase);
  EXPECT_EQ(a.seqs_done, b.seqs_done);
  EXPECT_EQ(a.decode_iter, b.decode_iter);
  EXPECT_EQ(a.rng, b.rng);
  EXPECT_GT(a.tokens_total, 0);
  EXPECT_EQ(b.tokens_total, 0);  // progress counters restart at the trace start
  EXPECT_EQ(b.steps_total, 0);
}

TEST(GenerationOnly, NeverLeavesGeneration) {
  const Scenario s =
      testing::load_or_die("scenarios/grpo-72b-a100x4.yaml", {"jobs.0.generation_only=true"});
  ASSERT_TRUE(s.jobs[0].grpo.generation_only);
  const auto run = testing::run_scenario(s, 1, 1200);
  for (const auto& snap : run.samples) ASSERT_EQ(snap.jobs[0].phase, Phase::kGenerate);
  EXPECT_GE(run.samples.back().jobs[0].steps_total, 1);  // rollout batches completed
  EXPECT_GT(run.samples.back().jobs[0].tokens_total, 0);
}

TEST(FleetScenario, KeyErrorsNameFileLineAndField) {
  const std::string base =
      "name: t\n"
      "gpus:\n"
      "  - {model: a100-sxm4-80gb, count: 2}\n"
      "budget: {watts: 600, scope: fleet}\n"
      "fleet: {start: staggered}\n"
      "jobs:\n"
      "  - {kind: grpo, model: qwen2.5-7b}\n"
      "  - {kind: grpo, model: qwen2.5-7b, start_offset_s: 4}\n";
  auto a = parse_scenario(base, "t.yaml", {});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("t.yaml:8: jobs.1.start_offset_s: conflicts with "
                                      "fleet.start: staggered"),
            std::string::npos)
      << a.status().message();
  EXPECT_EQ(a.status().exit_code(), 2);
  auto b = parse_scenario(base, "t.yaml", {"fleet.start=diagonal", "jobs.1.start_offset_s=0"});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("fleet.start: 'diagonal' is not one of"), std::string::npos)
      << b.status().message();
  std::string typo = base.substr(0, base.find("jobs:"));
  typo.replace(typo.find("start: staggered"), 16, "strat: staggered");
  auto c = parse_scenario(typo, "t.yaml", {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("t.yaml:5: fleet.strat: unknown key"), std::string::npos)
      << c.status().message();
  auto d = parse_scenario(base, "t.yaml", {"fleet.start=manual", "jobs.0.generation_only=maybe"});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("jobs.0.generation_only"), std::string::npos)
      << d.status().message();
  // --set fleet.start works on a scenario without a fleet section.
  auto e =
      load_scenario(testing::source_path("scenarios/grpo-7b-a100.yaml"), {"fleet.start=staggered"});
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->fleet_start, StartStrategy::kStaggered);
  auto f = parse_scenario(base, "t.yaml", {"jobs.1.start_offset_s=-1", "fleet.start=manual"});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("jobs.1.start_offset_s"), std::string::npos);
}

// A plant wrapper that keeps the fleet's summed power_w of every read.
class FleetPowerProbe : public Plant {
 public:
  explicit FleetPowerProbe(Plant& p) : p_(p) {}
  const PlantInfo& info() const override { return p_.info(); }
  Status read(double now_s, Snapshot& out) override {
    Status st = p_.read(now_s, out);
    double sum = 0;
    for (const auto& g : out.gpus) sum += g.power_w;
    power_w.push_back(sum);
    tokens = 0;
    for (const auto& j : out.jobs) tokens += j.tokens_total;
    return st;
  }
  Status write(const Command& c) override { return p_.write(c); }
  std::vector<double> power_w;
  double tokens = 0;

 private:
  Plant& p_;
};

struct Arm {
  const char* name;
  const char* start;
  bool control;
};
const Arm kArms[] = {{"aligned", "aligned", false},
                     {"random", "random", false},
                     {"staggered", "staggered", false},
                     {"staggered+fleet", "staggered", true}};
const std::vector<double> kWindowsS = {0.5, 10, 30, 300};

struct ArmRun {
  std::vector<WindowStats> w;  // per kWindowsS
  double peak30_w = 0, mean_w = 0, tokens = 0;
};

ArmRun run_arm(const Arm& arm, uint64_t seed, double duration_s) {
  const Scenario s = testing::load_or_die(kFleet, {std::string("fleet.start=") + arm.start});
  auto cluster = make_cluster(s, seed);
  FleetPowerProbe probe(*cluster);
  LoopConfig lc;
  lc.sample_period_s = s.sample_period_s;
  lc.duration_s = duration_s;
  ControlLoop loop(probe, s.budget, lc);
  FleetController fleet;
  if (arm.control) loop.add_controller(&fleet);
  EXPECT_TRUE(loop.run().ok());
  ArmRun r;
  r.w = analyze_windows(probe.power_w, s.sample_period_s, s.budget.entries[0].budget.watts,
                        kWindowsS);
  r.peak30_w = r.w[2].peak_mean_w;
  r.mean_w = testing::mean(probe.power_w);
  r.tokens = probe.tokens;
  return r;
}

// Direction only: on a short run, where the start phases still hold, staggering the jobs
// lowers the fleet's 30 s peak against aligned starts (summed over seeds).
TEST(Fleet, StaggeredLowersThe30sPeakVsAlignedOnAShortRun) {
  double aligned = 0, staggered = 0;
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    aligned += run_arm(kArms[0], seed, 120).peak30_w;
    staggered += run_arm(kArms[2], seed, 120).peak30_w;
  }
  std::printf("[fleet] 120 s runs, 8 seeds, mean 30 s peak: aligned %.0f W, staggered %.0f W\n",
              aligned / 8, staggered / 8);
  EXPECT_LT(staggered, aligned);
}

// docs/sources.md §1a [2nd], 16-GPU fleet, 30 s peak share of nameplate: aligned 56 %,
// random 54 %, staggered 53 %, staggered + job control 50 %; fleet violations 9.1 % at 0.5 s,
// 0 at >= 30 s. Printed for the table in docs/fleet.md; asserted (direction only): the
// controlled arm has the lowest 30 s peak and fewer 30 s violations than staggered alone.
TEST(Fleet, FourArmsOverTheScenarioHour) {
  const Scenario s = testing::load_or_die(kFleet);
  const double nameplate_w = 6400;
  std::vector<double> peak(4, 0.0), viol30(4, 0.0);
  for (size_t a = 0; a < 4; ++a) {
    std::vector<double> share, viol[4];
    double tokens = 0, mean_w = 0;
    for (uint64_t seed : {1, 2, 3, 4, 5}) {
      const ArmRun r = run_arm(kArms[a], seed, s.duration_s);
      share.push_back(r.peak30_w / nameplate_w);
      for (size_t w = 0; w < 4; ++w) viol[w].push_back(r.w[w].violation_rate);
      tokens += r.tokens / 5;
      mean_w += r.mean_w / 5;
    }
    peak[a] = testing::mean(share);
    viol30[a] = testing::mean(viol[2]);
    std::printf(
        "[fleet] %-16s 30 s peak %.1f %% of nameplate (min %.1f, max %.1f; ratio %.2f), mean "
        "%.0f W, violations vs %.0f W: 0.5 s %.1f %%, 10 s %.1f %%, 30 s %.1f %%, 5 min %.1f %%, "
        "tokens %.3g\n",
        kArms[a].name, 100 * peak[a], 100 * *std::min_element(share.begin(), share.end()),
        100 * *std::max_element(share.begin(), share.end()), 1 / peak[a], mean_w,
        s.budget.entries[0].budget.watts, 100 * testing::mean(viol[0]),
        100 * testing::mean(viol[1]), 100 * testing::mean(viol[2]), 100 * testing::mean(viol[3]),
        tokens);
  }
  EXPECT_LT(peak[3], std::min({peak[0], peak[1], peak[2]}));
  EXPECT_LT(viol30[3], viol30[2]);
}

}  // namespace
}  // namespace fw::sim

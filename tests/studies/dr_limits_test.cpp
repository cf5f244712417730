// `flexwatt dr replay`'s limits (issue 45): the grid's ramp limits are part of the target and the
// site's commanded target honours them; a target deeper than the site can hold is reported with
// its shortfall (the deepest holdable target from the jobs' tier floors, their caps' floors and
// the pausable jobs' budgets). Simulated, seeded.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "studies/dr_replay.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::studies {
namespace {

namespace fs = std::filesystem;

// The issue-28 minimum (ft 32 GPUs tier 0.75; pt 48 GPUs tier 0.5, pausable), with the step's
// depth, ramp window and release as given, and optional event keys appended.
std::string event_yaml(double depth, double ramp_s, double release_s, const std::string& extra) {
  return "sample_period_s: 0.5\nduration_s: 24000\nbaseline_w: measured\njobs:\n"
         "  - {name: ft, gpus: 32, sweep_csv: sweeps.csv, sweep_job: ft_llama_8b_dolly, "
         "tier_min: 0.75}\n"
         "  - {name: pt, gpus: 48, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.5, "
         "pausable: true}\n"
         "event:\n  steps:\n    - {start_s: 5400, ramp_s: " +
         std::to_string(ramp_s) + ", depth: " + std::to_string(depth) +
         "}\n  end_s: 17580\n  release_ramp_s: " + std::to_string(release_s) + "\n" + extra;
}

class DrLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fw_drlim_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    fs::copy_file(fs::path(FLEXWATT_SOURCE_DIR) / "data/a100_power_cap_sweep.csv",
                  dir_ / "sweeps.csv", fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(dir_); }
  DrEvent load(const std::string& text) {
    std::ofstream(dir_ / "e.yaml") << text;
    auto ev = load_dr_event((dir_ / "e.yaml").string());
    EXPECT_TRUE(ev.ok()) << ev.status().message();
    return ev.ok() ? *ev : DrEvent{};
  }
  fs::path dir_;
};

// The grid asks for -25 % at once (ramp_s 0) and back at once (release 0) but limits the site to
// 20 W/s down and 10 W/s up. The limit wins over the step: the site moves no faster. Measured on
// 1-minute means one minute apart, tolerance 8 W/s: on the quiet plant (`noise: quiet`: the
// bounds below are derived from its noise, and it has no dips to take the measured baseline
// under the uncapped draw the split starts from, which the ramp shortfall's bound assumes) this
// site's 1-minute noise is
// 0.005 x sqrt(11.1^2 + 18.3^2) kW ≈ 107 W, so the difference of two 1-minute means has an sd of
// ≈ 151 W, 2.5 W/s; 8 W/s is ≈ three of them.
TEST_F(DrLimits, RampLimitsHoldTheSiteOnAStepTarget) {
  const DrEvent ev =
      load("noise: quiet\n" +
           event_yaml(0.25, 0, 0, "  ramp_down_w_per_s: 20\n  ramp_up_w_per_s: 10\n"));
  auto r = run_dr_replay(ev, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double tol = 8;
  EXPECT_LE(r->max_ramp_down_w_per_s, 20 + tol);
  EXPECT_LE(r->max_ramp_up_w_per_s, 10 + tol);
  // 25 % of ≈ 29.4 kW at 20 W/s: the hold band is reached no sooner than ≈ 367 s after the
  // start (less the tolerance band, 1 % of the baseline at 20 W/s: 15 s).
  EXPECT_GE(r->ramp_down_s, (0.25 - 0.01) * r->baseline_w / 20 - 5);
  // The commanded target (the loop's split with its node corrections) moves no faster than the
  // limits, exactly; the limits are reported beside what was measured.
  EXPECT_LE(r->commanded_max_ramp_down_w_per_s, 20 + 1e-6);
  EXPECT_LE(r->commanded_max_ramp_up_w_per_s, 10 + 1e-6);
  EXPECT_GT(r->commanded_max_ramp_down_w_per_s, 19);  // it does use the limit
  EXPECT_DOUBLE_EQ(r->ramp_down_limit_w_per_s, 20);
  EXPECT_DOUBLE_EQ(r->ramp_up_limit_w_per_s, 10);
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_NEAR(r->steps[0].ramp_limit_s, 0.25 * r->baseline_w / 20, 1e-6);
  // ramp_down_s is the physical time to the band (10 s means); the trailing 1-minute mean gets
  // there later, reported under its own name.
  EXPECT_GT(r->ramp_down_1min_s, r->ramp_down_s);
  EXPECT_LE(r->ramp_down_s, 0.25 * r->baseline_w / 20 + 60);
  // The release continues at 10 W/s after the grid's (instant) one: the site stays capped
  // until it is back, so the measured rise covers the time after the event too.
  const auto j = dr_replay_json(*r);
  EXPECT_DOUBLE_EQ(j["ramp"]["down"]["limit_w_per_s"].get<double>(), 20);
  EXPECT_LE(j["ramp"]["down"]["max_ramp_w_per_s"].get<double>(), 20 + tol);
  EXPECT_LE(j["ramp"]["up"]["commanded_max_ramp_w_per_s"].get<double>(), 10 + 1e-6);
  EXPECT_TRUE(j["steps"][0].contains("ramp_down_1min_s"));
  const std::string table = dr_replay_table(*r);
  EXPECT_NE(table.find("ramp limit down 20 W/s"), std::string::npos) << table;
  // A step the limit cannot follow is a target the site cannot hold while it ramps: said so,
  // with the W the limit kept it above the target (beyond the tolerance), not a tier's floor.
  EXPECT_GT(r->minutes_above_target, 1);
  EXPECT_FALSE(r->feasible);
  EXPECT_DOUBLE_EQ(r->shortfall_w, 0);
  EXPECT_GT(r->ramp_shortfall_w, 0.2 * r->baseline_w);  // 25 % at once, less 1 % tolerance
  EXPECT_LE(r->ramp_shortfall_w, 0.24 * r->baseline_w + 1e-6);
  EXPECT_NE(table.find("while ramping"), std::string::npos) << table;
  // Within its ramp window (900 s for the 367 s the limit needs) the same step holds.
  auto w = run_dr_replay(
      load(event_yaml(0.25, 900, 840, "  ramp_down_w_per_s: 20\n  ramp_up_w_per_s: 10\n")), {});
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->feasible) << w->ramp_shortfall_w;
  EXPECT_EQ(w->minutes_above_target, 0);
  EXPECT_LE(w->commanded_max_ramp_down_w_per_s, 20 + 1e-6);
  // The same event without limits steps straight down: the commanded target moves at once.
  const DrEvent fast = load(event_yaml(0.25, 0, 0, ""));
  auto f = run_dr_replay(fast, {});
  ASSERT_TRUE(f.ok());
  EXPECT_GT(f->max_ramp_down_w_per_s, 80);
  EXPECT_LT(f->ramp_down_s, 15);  // the caps' lag and the 10 s mean, not a ramp
  EXPECT_TRUE(dr_replay_json(*f)["ramp"]["down"]["limit_w_per_s"].is_null());
}

// On the quiet plant, limits the step's ramp window leaves time for (25 % at 20 W/s: ≈ 367 s of
// a 900 s window): the target is held and said holdable, the rise follows the up limit, and the
// site loop uses both limits (the draw it predicts moves at them, fleet/site_loop.hpp "limits").
TEST_F(DrLimits, RampLimitsWithinTheWindowAreHeld) {
  const double tol = 8;  // as above
  DrReplayOptions o;
  auto w = run_dr_replay(
      load("noise: quiet\n" +
           event_yaml(0.25, 900, 840, "  ramp_down_w_per_s: 20\n  ramp_up_w_per_s: 10\n")),
      o);
  ASSERT_TRUE(w.ok());
  EXPECT_GT(w->commanded_max_ramp_down_w_per_s, 19);
  EXPECT_LE(w->commanded_max_ramp_down_w_per_s, 20 + 1e-6);
  EXPECT_GT(w->commanded_max_ramp_up_w_per_s, 9);
  EXPECT_LE(w->commanded_max_ramp_up_w_per_s, 10 + 1e-6);
  EXPECT_TRUE(w->feasible) << w->ramp_shortfall_w;
  EXPECT_EQ(w->minutes_above_target, 0);
  EXPECT_LE(w->max_ramp_up_w_per_s, 10 + tol);
}

// The least draw of a job whose throughput is at least h on its curve (linear in the cap between
// the sweep's points, so linear in power too): a calculation beside the loop's allocation code.
double least_draw_w(const DrJobSpec& j, double h) {
  for (double cap = j.curve.front().cap_w; cap <= j.curve.back().cap_w; cap += 0.01) {
    if (dr_t_rel_at(j, cap) >= h) return j.gpus * dr_power_at(j, cap);
  }
  return j.gpus * j.curve.back().power_w;
}

// At the event's start (t = 5400 s, both jobs at full throughput so far), over the event to the
// release's midpoint (18000 s) and full throughput in the 6000 s after it, ft needs
// (0.755 x 24000 - 5400 - 6000) / 12600 = 0.533 of its throughput and pt
// (0.505 x 24000 - 11400) / 12600 = 0.057 (under its lowest cap's: it sits at that cap). pt may
// pause, but not through the event: paused from 5400 s to the release (17580 s) its run would be
// (5400 + 24000 - 17580 - 120 s resume) / 24000 = 0.4875 < 0.51 (tier + 0.01, the loop's rule),
// so it counts at its floor.
double issue_holdable_w(const DrEvent& ev) {
  const double h_ft = (0.755 * 24000 - 5400 - 6000) / 12600;
  const double h_pt = (0.505 * 24000 - 5400 - 6000) / 12600;
  return least_draw_w(ev.jobs[0], h_ft) + least_draw_w(ev.jobs[1], h_pt);
}

TEST_F(DrLimits, InfeasibleTargetIsReportedWithItsShortfall) {
  const DrEvent ev = load(event_yaml(0.99, 900, 840, ""));
  auto r = run_dr_replay(ev, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const double holdable = issue_holdable_w(ev);
  EXPECT_NEAR(r->holdable_target_w, holdable, 0.002 * holdable);
  ASSERT_EQ(r->steps.size(), 1u);
  EXPECT_NEAR(r->steps[0].holdable_target_w, holdable, 0.002 * holdable);
  // ft cannot pause: its floor alone is above the 1 % target for the whole hold.
  const double target = 0.01 * r->baseline_w;
  EXPECT_FALSE(r->feasible);
  EXPECT_GE(r->shortfall_w, least_draw_w(ev.jobs[0], 0.533) - target - 1);
  EXPECT_GE(r->infeasible_s, 17580 - 6300);  // every second of the hold
  EXPECT_GT(r->minutes_above_target, 100);
  const auto j = dr_replay_json(*r);
  EXPECT_FALSE(j["feasible"].get<bool>());
  EXPECT_NEAR(j["holdable_target_w"].get<double>(), holdable, 0.002 * holdable);
  EXPECT_DOUBLE_EQ(j["shortfall_w"].get<double>(), r->shortfall_w);
  EXPECT_NEAR(j["holdable_depth"].get<double>(), 1 - r->holdable_target_w / r->baseline_w, 1e-12);
  EXPECT_GT(j["steps"][0]["shortfall_w"].get<double>(), 0);
  const std::string table = dr_replay_table(*r);
  EXPECT_NE(table.find("target CANNOT be held"), std::string::npos) << table;
  EXPECT_NE(table.find("shortfall"), std::string::npos) << table;
}

TEST_F(DrLimits, HoldableTargetIsReportedAndHeld) {
  const DrEvent ev = load(event_yaml(0.25, 900, 840, ""));
  auto r = run_dr_replay(ev, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  // The holdable target at the start does not depend on the depth asked for.
  EXPECT_NEAR(r->holdable_target_w, issue_holdable_w(ev), 0.002 * issue_holdable_w(ev));
  EXPECT_LT(r->holdable_target_w, 0.75 * r->baseline_w);
  EXPECT_TRUE(r->feasible);
  EXPECT_DOUBLE_EQ(r->shortfall_w, 0);
  EXPECT_DOUBLE_EQ(r->infeasible_s, 0);
  EXPECT_EQ(r->minutes_above_target, 0);
  const std::string table = dr_replay_table(*r);
  EXPECT_NE(table.find("target holdable"), std::string::npos) << table;
}

// Caps alone cannot reach -78 % above the tiers; a pretraining job may pause through the event
// (its budget covers it), so the target is holdable and held (the loop pauses one).
TEST_F(DrLimits, PausingWithinATiersBudgetMakesADeepTargetHoldable) {
  const DrEvent ev = load(R"(sample_period_s: 1
duration_s: 12000
baseline_w: measured
jobs:
  - {name: ft, gpus: 32, sweep_csv: sweeps.csv, sweep_job: ft_llama_8b_dolly, tier_min: 0.75}
  - {name: pt1, gpus: 32, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.78, pausable: true}
  - {name: pt2, gpus: 32, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.78, pausable: true}
event:
  steps: [{start_s: 1200, ramp_s: 300, depth: 0.78}]
  end_s: 3600
  release_ramp_s: 300
)");
  auto r = run_dr_replay(ev, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(r->pauses.size(), 1u);
  EXPECT_TRUE(r->feasible) << r->shortfall_w;
  EXPECT_DOUBLE_EQ(r->shortfall_w, 0);
  EXPECT_LT(r->holdable_target_w, 0.22 * r->baseline_w);
  EXPECT_EQ(r->minutes_above_target, 0);
  // With tiers of 0.9 neither pretraining job may pause for long (960 s each, against a
  // 2400 s event): the same depth is then beyond what the site can hold, and says so.
  DrEvent tight = ev;
  for (auto& j : tight.jobs) {
    if (j.pausable) j.tier_min = 0.9;
  }
  auto t = run_dr_replay(tight, {});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(t->feasible);
  EXPECT_GT(t->shortfall_w, 0);
  EXPECT_GT(t->holdable_target_w, 0.22 * t->baseline_w);
}

}  // namespace
}  // namespace fw::studies

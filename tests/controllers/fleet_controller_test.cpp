// The fleet controller (fleet_controller.hpp) on a small multi-job plant: each job's GPUs
// draw min(demand, cap) with a 1 s lag and seeded noise, per-GPU demand
// 60 + 20·gen_concurrency W (knob 1..16) while generating, a fixed power otherwise.

#include "controllers/fleet_controller.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "control/control_loop.hpp"
#include "core/rng.hpp"

namespace fw {
namespace {

struct TestJob {
  int gpus = 1;
  bool knob = true;    // exposes gen_concurrency
  double fixed_w = 0;  // per-GPU power when !knob or when not generating
  Phase phase = Phase::kGenerate;
};

class MultiJobPlant : public Plant {
 public:
  MultiJobPlant(std::vector<TestJob> jobs, uint64_t seed) : jobs_(std::move(jobs)) {
    rng_ = Rng::stream(seed, "test.fleet");
    int g = 0;
    for (size_t j = 0; j < jobs_.size(); ++j) {
      JobInfo ji;
      ji.name = "job" + std::to_string(j);
      ji.kind = "grpo";
      for (int k = 0; k < jobs_[j].gpus; ++k, ++g) {
        info_.gpus.push_back({"test-gpu", 100, 400, 400, 400});
        ji.gpus.push_back(g);
        gpu_job_.push_back(static_cast<int>(j));
      }
      if (jobs_[j].knob) {
        ji.knob_ranges[0] = {true, 1, 16, 1};
        ji.default_knobs = {16, kUnset};
      }
      info_.jobs.push_back(ji);
    }
    conc_.assign(jobs_.size(), 16);
    power_.assign(info_.gpus.size(), 60);
    cap_.assign(info_.gpus.size(), 400);
  }
  const PlantInfo& info() const override { return info_; }
  double demand_w(size_t j) const {
    const TestJob& t = jobs_[j];
    if (!t.knob || t.phase != Phase::kGenerate) return t.fixed_w;
    return 60 + 20 * conc_[j];
  }
  Status read(double now_s, Snapshot& out) override {
    const double a = 1 - std::exp(-std::max(0.0, now_s - t_) / 1.0);
    t_ = now_s;
    out.time_s = now_s;
    out.gpus.resize(info_.gpus.size());
    for (size_t g = 0; g < info_.gpus.size(); ++g) {
      power_[g] += a * (std::min(demand_w(gpu_job_[g]), cap_[g]) - power_[g]);
      out.gpus[g] = GpuReading{};
      out.gpus[g].gpu = static_cast<int>(g);
      out.gpus[g].power_w = power_[g] + rng_.normal(0, 1.0);
      out.gpus[g].cap_w = cap_[g];
    }
    out.jobs.resize(jobs_.size());
    for (size_t j = 0; j < jobs_.size(); ++j) {
      out.jobs[j] = JobReading{};
      out.jobs[j].job = static_cast<int>(j);
      out.jobs[j].phase = jobs_[j].phase;
      out.jobs[j].knobs = {jobs_[j].knob ? conc_[j] : kUnset, kUnset};
    }
    return Status::Ok();
  }
  Status write(const Command& cmd) override {
    for (size_t j = 0; j < cmd.knobs.size() && j < jobs_.size(); ++j) {
      const double c = cmd.knobs[j][0];
      if (!std::isnan(c) && jobs_[j].knob) conc_[j] = c;
    }
    for (size_t g = 0; g < cmd.power_cap_w.size() && g < cap_.size(); ++g) {
      if (!std::isnan(cmd.power_cap_w[g])) cap_[g] = cmd.power_cap_w[g];
    }
    return Status::Ok();
  }
  double job_power_w(size_t j) const {
    double s = 0;
    for (int g : info_.jobs[j].gpus) s += power_[g];
    return s;
  }
  double conc(size_t j) const { return conc_[j]; }
  double cap_w(size_t g) const { return cap_[g]; }
  void set_fixed_w(size_t j, double w) { jobs_[j].fixed_w = w; }

 private:
  PlantInfo info_;
  std::vector<TestJob> jobs_;
  std::vector<int> gpu_job_;
  std::vector<double> conc_, power_, cap_;
  double t_ = 0;
  Rng rng_;
};

BudgetSchedule fleet_budget(double watts) {
  BudgetSchedule b;
  b.entries.push_back({0, Budget{watts, BudgetScope::kFleet, 30}});
  return b;
}

struct FleetRun {
  EpisodeResult result;
  std::vector<double> job_power_w, conc, shares_w;  // job power: mean over the second half
};

FleetRun run(MultiJobPlant& plant, double budget_w, double duration_s = 600,
             FleetControllerConfig cfg = {}) {
  const BudgetSchedule b = fleet_budget(budget_w);
  LoopConfig lc;
  lc.duration_s = duration_s;
  lc.windows_s = {0.5, 30};
  ControlLoop loop(plant, b, lc);
  FleetController c(cfg);
  loop.add_controller(&c);
  EXPECT_TRUE(loop.start().ok());
  const size_t n_jobs = plant.info().jobs.size();
  FleetRun r;
  r.job_power_w.assign(n_jobs, 0.0);
  int64_t n_late = 0;
  while (!loop.done()) {
    EXPECT_TRUE(loop.step().ok());
    if (loop.time_s() <= duration_s / 2) continue;  // settled half: mean job power
    ++n_late;
    for (size_t j = 0; j < n_jobs; ++j) r.job_power_w[j] += plant.job_power_w(j);
  }
  for (double& p : r.job_power_w) p /= static_cast<double>(std::max<int64_t>(1, n_late));
  r.result = loop.result();
  for (size_t j = 0; j < n_jobs; ++j) r.conc.push_back(plant.conc(j));
  r.shares_w = c.shares_w();
  return r;
}

TEST(SplitBudget, WaterFillingByWeight) {
  // Everyone hungry: proportional to weight, summing to the total.
  auto s = split_budget_w(800, {400, 1200}, {1e9, 1e9});
  EXPECT_NEAR(s[0], 200, 1e-9);
  EXPECT_NEAR(s[1], 600, 1e-9);
  // A job capped below its weighted share gives the rest to the others.
  s = split_budget_w(900, {1, 1, 1}, {100, 1e9, 1e9});
  EXPECT_NEAR(s[0], 100, 1e-9);
  EXPECT_NEAR(s[1], 400, 1e-9);
  EXPECT_NEAR(s[2], 400, 1e-9);
  // Cascading caps.
  s = split_budget_w(900, {1, 1, 1}, {100, 250, 1e9});
  EXPECT_NEAR(s[0], 100, 1e-9);
  EXPECT_NEAR(s[1], 250, 1e-9);
  EXPECT_NEAR(s[2], 550, 1e-9);
  // All fit: leftover handed out by weight on top of the caps.
  s = split_budget_w(1000, {1, 3}, {100, 100});
  EXPECT_NEAR(s[0], 300, 1e-9);
  EXPECT_NEAR(s[1], 700, 1e-9);
  // No positive weight: equal.
  s = split_budget_w(600, {0, 0}, {1e9, 1e9});
  EXPECT_NEAR(s[0], 300, 1e-9);
  EXPECT_TRUE(split_budget_w(10, {}, {}).empty());
}

TEST(FleetController, HoldsEachJobToItsNameplateShare) {
  // 1-GPU and 3-GPU jobs, each able to draw 380 W/GPU; fleet budget 800 W.
  MultiJobPlant plant({{1}, {3}}, 1);
  const FleetRun r = run(plant, 800);
  // Shares ∝ nameplate: 0.95·800·(1/4, 3/4).
  EXPECT_NEAR(r.shares_w[0], 190, 3);
  EXPECT_NEAR(r.shares_w[1], 570, 6);
  EXPECT_NEAR(r.job_power_w[0], 190, 190 * 0.10);
  EXPECT_NEAR(r.job_power_w[1], 570, 570 * 0.10);
  // Uncontrolled the fleet would draw 4·380 W; after the first windows it holds the budget.
  EXPECT_LT(r.result.violation_rate[1], 0.1);
  EXPECT_LT(r.conc[0], 16);
  EXPECT_LT(r.conc[1], 16);
}

TEST(FleetController, RedistributesHeadroomOfALowJob) {
  // Job 0 has no knob and draws 100 W/GPU; job 1 is hungry. Equal nameplates (2 GPUs each).
  MultiJobPlant plant({{2, false, 100}, {2}}, 2);
  const FleetRun r = run(plant, 800);
  // Nameplate split alone would give job 1 0.95·400 = 380 W; it gets job 0's unused share.
  EXPECT_GT(r.shares_w[1], 550);
  EXPECT_GT(r.job_power_w[1], 500);
  EXPECT_LT(r.result.worst_window_ratio[1], 1.0 + 0.02);
}

TEST(FleetController, AmpleBudgetRaisesEveryKnobToItsTop) {
  MultiJobPlant plant({{1}, {2}}, 3);
  const FleetRun r = run(plant, 5000, 300);
  EXPECT_EQ(r.conc[0], 16);
  EXPECT_EQ(r.conc[1], 16);
  EXPECT_EQ(r.result.violation_rate[0], 0);
}

TEST(FleetController, HoldsTheKnobOutsideGeneration) {
  // Job 1 is in its update phase at 380 W/GPU, far above its share: the knob has no
  // authority there, so the controller must not wind it down.
  MultiJobPlant plant({{1}, {1, true, 380, Phase::kUpdate}}, 4);
  const FleetRun r = run(plant, 400, 120);
  EXPECT_EQ(r.conc[1], 16);
  EXPECT_LT(r.conc[0], 16);  // job 0 (generating) gives way instead
}

TEST(FleetController, CapsCutJobsOverTheirShareAndComeBack) {
  // Job 0 generates (knob); job 1 sits in update at 380 W/GPU on 2 GPUs, out of the knob's
  // reach. Fleet 3 GPUs, budget 600 W: over, and only caps can cut job 1.
  MultiJobPlant plant({{1}, {2, true, 380, Phase::kUpdate}}, 6);
  const BudgetSchedule b = fleet_budget(600);
  LoopConfig lc;
  lc.duration_s = 300;
  lc.windows_s = {30};
  ControlLoop loop(plant, b, lc);
  FleetController c;
  loop.add_controller(&c);
  ASSERT_TRUE(loop.start().ok());
  while (!loop.done()) ASSERT_TRUE(loop.step().ok());
  // Job 1 capped below its 380 W draw, never below the device minimum (100 W).
  EXPECT_LT(plant.cap_w(1), 300);
  EXPECT_LT(plant.cap_w(2), 300);
  EXPECT_GE(plant.cap_w(1), 100);
  EXPECT_GE(plant.cap_w(2), 100);
  EXPECT_LT(plant.job_power_w(0) + plant.job_power_w(1), 600 * 1.02);
  EXPECT_EQ(plant.conc(1), 16);  // knob held outside generation

  // Budget far below what the floor allows: caps stop at the device minimum.
  MultiJobPlant low({{1, false, 380}, {2, false, 380}}, 7);
  const FleetRun rl = run(low, 100, 300);
  for (int g = 0; g < 3; ++g) EXPECT_EQ(low.cap_w(g), 100);
  EXPECT_GT(rl.result.violation_rate[1], 0.5);  // the budget cannot be held

  // Job 1 leaves update for a light phase: caps rise back to the default.
  MultiJobPlant back({{1}, {2, true, 380, Phase::kUpdate}}, 8);
  LoopConfig lc2;
  lc2.duration_s = 600;
  ControlLoop loop2(back, b, lc2);
  FleetController c2;
  loop2.add_controller(&c2);
  ASSERT_TRUE(loop2.start().ok());
  double min_cap_w = 400;
  while (!loop2.done()) {
    if (loop2.time_s() >= 200) back.set_fixed_w(1, 50);  // a light phase: 50 W/GPU
    ASSERT_TRUE(loop2.step().ok());
    min_cap_w = std::min(min_cap_w, back.cap_w(1));
  }
  EXPECT_LT(min_cap_w, 300);
  EXPECT_EQ(back.cap_w(1), 400);
  EXPECT_EQ(back.cap_w(2), 400);
}

TEST(FleetController, CapsOffLeavesCapsAlone) {
  MultiJobPlant plant({{1}, {2, true, 380, Phase::kUpdate}}, 6);
  FleetControllerConfig cfg;
  cfg.caps = false;
  run(plant, 600, 120, cfg);
  for (int g = 0; g < 3; ++g) EXPECT_EQ(plant.cap_w(g), 400);
}

TEST(FleetController, JobScopeBudgetIsEachJobsOwn) {
  MultiJobPlant plant({{1}, {1}}, 5);
  BudgetSchedule b;
  b.entries.push_back({0, Budget{250, BudgetScope::kJob, 30}});
  LoopConfig lc;
  lc.duration_s = 300;
  ControlLoop loop(plant, b, lc);
  FleetController c;
  loop.add_controller(&c);
  ASSERT_TRUE(loop.run().ok());
  EXPECT_NEAR(c.shares_w()[0], 0.95 * 250, 1e-9);
  EXPECT_NEAR(plant.job_power_w(0), 0.95 * 250, 25);
  EXPECT_NEAR(plant.job_power_w(1), 0.95 * 250, 25);
}

TEST(FleetController, DeterministicForASeed) {
  MultiJobPlant a({{1}, {3}}, 9), b({{1}, {3}}, 9);
  const FleetRun ra = run(a, 800, 200), rb = run(b, 800, 200);
  EXPECT_EQ(ra.conc, rb.conc);
  EXPECT_EQ(ra.job_power_w, rb.job_power_w);
}

}  // namespace
}  // namespace fw

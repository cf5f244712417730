// The incremental completion-length fit (sim/fit_online.hpp): the clipped lognormal's mean and
// its inverse, and the fit from a simulated run's telemetry alone.

#include "sim/fit_online.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"
#include "sim/scenario.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

TEST(FitOnline, ClippedMeanMatchesDrawsAndInverts) {
  Rng rng(11);
  for (double median : {40.0, 160.0, 400.0, 900.0}) {
    double sum = 0;
    const int n = 200000;
    for (int i = 0; i < n; ++i) {
      sum += std::clamp(std::round(rng.lognormal(median, 0.8)), 1.0, 1024.0);
    }
    const double mean = clipped_lognormal_mean(median, 0.8, 1024);
    EXPECT_NEAR(mean, sum / n, 0.01 * mean) << median;
    EXPECT_NEAR(median_for_clipped_mean(mean, 0.8, 1024), median, 1e-6 * median);
  }
  // The clip binds: the mean stays under the unclipped lognormal mean and under the clip.
  EXPECT_LT(clipped_lognormal_mean(900, 0.8, 1024), 900 * std::exp(0.32));
  EXPECT_LT(clipped_lognormal_mean(1e5, 0.8, 1024), 1024.0 + 1e-9);
  EXPECT_DOUBLE_EQ(median_for_clipped_mean(5000, 0.8, 1024), 1024.0);  // out of reach
}

DeclaredGrpoJob declared_of(const JobSpec& j) {
  DeclaredGrpoJob d;
  d.grpo = true;
  d.prompts_per_step = j.grpo.prompts_per_step;
  d.completion_sigma = j.grpo.completion_sigma;
  d.completion_max_tokens = j.grpo.completion_max_tokens;
  d.completion_median_tokens = j.grpo.completion_median_tokens;
  return d;
}

// The growing-length scenario, read only through snapshots: the fit follows the curve's
// median over its window (160 · (1 + 1.5 t / 9000) at the window's middle), and is refused
// before min_steps steps completed.
TEST(FitOnline, FollowsTheDriftFromTelemetryOnly) {
  const Scenario s = testing::load_or_die("scenarios/grpo-7b-a100-drift.yaml");
  ASSERT_EQ(s.jobs.size(), 1u);
  OnlineFitConfig cfg;
  cfg.window_s = 1200;
  cfg.min_steps = 3;
  OnlineGrpoFit fit({declared_of(s.jobs[0])}, cfg);
  auto plant = make_cluster(s, 500001);
  Snapshot snap;
  bool early_checked = false;
  for (int k = 1; k <= 2 * 6000; ++k) {
    const double t = 0.5 * k;
    ASSERT_TRUE(plant->read(t, snap).ok());
    fit.observe(snap);
    if (!early_checked && t >= 60) {  // about one step in: too few to fit
      EXPECT_FALSE(fit.fit(t)[0].fitted);
      EXPECT_DOUBLE_EQ(fit.fit(t)[0].median_tokens, 160.0);  // the declared one
      early_checked = true;
    }
    if (k % 2400 == 0) {  // every 1200 s
      const std::vector<JobLengthFit> f = fit.fit(t);
      ASSERT_TRUE(f[0].fitted) << t;
      EXPECT_GE(f[0].steps, 8) << t;
      const double truth = 160.0 * (1.0 + 1.5 * (t - 0.5 * cfg.window_s) / 9000.0);
      EXPECT_NEAR(f[0].median_tokens, truth, 0.12 * truth) << "t=" << t;
    }
  }
  EXPECT_GT(fit.steps_recorded(), 80u);
}

}  // namespace
}  // namespace fw::sim

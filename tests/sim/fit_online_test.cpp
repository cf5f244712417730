// The incremental completion-length fit (sim/fit_online.hpp): the clipped lognormal's mean and
// its inverse, and the fit from a simulated run's telemetry alone.

#include "sim/fit_online.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

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

// Trend extrapolation on a growing and a shrinking curve: projected half a 1200 s horizon past
// each refit, the fit lands nearer the median that will be in force then (the curve at now +
// 600 s) than the window's plain mean (which lags by half the window and the horizon), and the
// projection moves the right way; a tight bound holds it to the window's mean x the factor.
TEST(FitOnline, TrendProjectsGrowingAndShrinkingCurvesAhead) {
  struct Case {
    const char* file;
    double end_factor;  // the curve: 1 at 0 s, end_factor at 9000 s, linear
  };
  for (const Case& c : {Case{"scenarios/grpo-7b-a100-drift.yaml", 2.5},
                        Case{"scenarios/grpo-7b-a100-drift-decline.yaml", 0.5}}) {
    const Scenario s = testing::load_or_die(c.file);
    OnlineFitConfig plain_cfg;
    plain_cfg.window_s = 1200;
    OnlineFitConfig trend_cfg = plain_cfg;
    trend_cfg.trend_ahead_s = 600;
    trend_cfg.trend_window_s = 3600;
    OnlineFitConfig tight_cfg = trend_cfg;
    tight_cfg.trend_max_factor = 1.02;
    OnlineGrpoFit plain({declared_of(s.jobs[0])}, plain_cfg);
    OnlineGrpoFit trend({declared_of(s.jobs[0])}, trend_cfg);
    OnlineGrpoFit tight({declared_of(s.jobs[0])}, tight_cfg);
    auto plant = make_cluster(s, 500001);
    Snapshot snap;
    double err_plain = 0, err_trend = 0, signed_move = 0;
    int n = 0;
    for (int k = 1; k <= 2 * 8400; ++k) {
      const double t = 0.5 * k;
      ASSERT_TRUE(plant->read(t, snap).ok());
      plain.observe(snap);
      trend.observe(snap);
      tight.observe(snap);
      if (k % 1200 != 0 || t < 1800) continue;  // every 600 s from 1800 s
      const JobLengthFit p = plain.fit(t)[0], q = trend.fit(t)[0], r = tight.fit(t)[0];
      ASSERT_TRUE(p.fitted && q.fitted && r.fitted) << c.file << " t=" << t;
      const double ahead = 160.0 * (1.0 + (c.end_factor - 1.0) * std::min(1.0, (t + 600) / 9000));
      err_plain += std::abs(p.median_tokens - ahead) / ahead;
      err_trend += std::abs(q.median_tokens - ahead) / ahead;
      signed_move += q.projected_mean_tokens - q.mean_tokens;
      EXPECT_DOUBLE_EQ(p.projected_mean_tokens, p.mean_tokens);  // no trend: the window's mean
      EXPECT_LE(r.projected_mean_tokens, r.mean_tokens * 1.02 + 1e-9);
      EXPECT_GE(r.projected_mean_tokens, r.mean_tokens / 1.02 - 1e-9);
      ++n;
    }
    ASSERT_GE(n, 10);
    EXPECT_LT(err_trend, err_plain)
        << c.file << ": mean rel. error trend " << err_trend / n << ", plain " << err_plain / n;
    if (c.end_factor > 1) {
      EXPECT_GT(signed_move, 0) << c.file;
    } else {
      EXPECT_LT(signed_move, 0) << c.file;
    }
    std::printf(
        "[trend] %s: mean rel. error of the median at now + 600 s: plain %.3f, trend %.3f\n",
        c.file, err_plain / n, err_trend / n);
  }
}

}  // namespace
}  // namespace fw::sim

#include "eval/stats.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "eval/evaluation.hpp"

namespace fw::eval {
namespace {

TEST(Stats, MeanAndStudentTHalfWidth) {
  const Stat s = stat_of({1, 2, 3});
  EXPECT_DOUBLE_EQ(s.mean, 2);
  // sd 1, t(2) = 4.303: 4.303 / sqrt(3).
  EXPECT_NEAR(s.ci95, 4.303 / std::sqrt(3.0), 1e-12);
  EXPECT_TRUE(std::isnan(stat_of({5}).ci95));
  EXPECT_EQ(stat_of({5}).mean, 5);
  EXPECT_EQ(stat_of({}).mean, 0);
  EXPECT_EQ(to_json(stat_of({5}))["ci95"], nullptr);
}

TEST(Stats, TQuantiles) {
  EXPECT_EQ(t975(0), 0);
  EXPECT_DOUBLE_EQ(t975(1), 12.706);
  EXPECT_DOUBLE_EQ(t975(30), 2.042);
  EXPECT_NEAR(t975(1000), 1.962, 1e-3);
}

TEST(Stats, RatiosAndText) {
  EXPECT_EQ(ratio_json(1, 0), nullptr);
  EXPECT_DOUBLE_EQ(ratio_json(1, 4).get<double>(), 0.25);
  EXPECT_EQ(fmt_ratio(nullptr), "-");
  EXPECT_EQ(fmt_ratio(0.25), "0.250");
  EXPECT_EQ(fmt_stat({1.5, kUnset}, 100, 1), "150.0");
  EXPECT_EQ(fmt_stat({1.5, 0.25}, 2, 2), "3.00 ±0.50");
  EXPECT_EQ(window_key(0.5), "0.5");
  EXPECT_TRUE(is_headline_window(30));
  EXPECT_FALSE(is_headline_window(60));
}

EpisodeResult episode(double tokens, double viol30, int64_t windows, double node_w) {
  EpisodeResult r;
  r.tokens = tokens;
  r.energy_j = 2 * tokens;
  r.tokens_per_mwh = 3 * tokens;
  r.mean_power_w = 100;
  r.windows_s = {30};
  r.violation_rate = {viol30};
  r.windows_judged = {windows};
  r.node_window_means_w = {node_w, node_w / 2};
  r.limiter.clamped = 2;
  return r;
}

TEST(Summarise, PoolsSeedsIntoStatsAndTheWindowsCurve) {
  PlantInfo info;
  info.gpus.push_back({"g", 100, 400, 400, 400});
  const ControllerSummary s =
      summarise({episode(10, 0.5, 10, 200), episode(20, 0.0, 30, 300)}, {30}, info, {});
  EXPECT_DOUBLE_EQ(s.tokens.mean, 15);
  EXPECT_DOUBLE_EQ(s.energy_j.mean, 30);
  EXPECT_DOUBLE_EQ(s.tokens_per_mwh.mean, 45);
  EXPECT_DOUBLE_EQ(s.interventions.mean, 2);
  EXPECT_DOUBLE_EQ(s.violation_rate[0].mean, 0.25);  // mean of the per-seed rates
  ASSERT_EQ(s.curve.points.size(), 1u);
  EXPECT_DOUBLE_EQ(s.curve.points[0].violation_rate, 5.0 / 40);  // pooled: 5 of 40 windows
  EXPECT_EQ(s.episodes.size(), 2u);
  // Peak node power 200 W and 300 W of a 400 W nameplate.
  EXPECT_DOUBLE_EQ(s.peak_share_of_nameplate.mean, 0.625);
}

}  // namespace
}  // namespace fw::eval

#include "analysis/windows_curve.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/oversubscription.hpp"
#include "analysis/windows.hpp"

namespace fw {
namespace {

// 600 s at 0.5 s: 100 W, with 200 W bursts of 1, 2, 4, 8 and 16 s starting at t = 60, 120,
// 180, 240 and 300 s. Budget 150 W. A window holding a burst of b seconds (and base power
// elsewhere) has mean 100 + 100·b/W, above 150 W iff b > W/2.
std::vector<double> burst_series() {
  std::vector<double> p(1200, 100.0);
  const double lengths_s[] = {1, 2, 4, 8, 16};
  for (int k = 0; k < 5; ++k) {
    const int start = (k + 1) * 120;  // samples: t = 60·(k+1) s
    for (int i = 0; i < static_cast<int>(lengths_s[k] / 0.5); ++i) p[start + i] = 200.0;
  }
  return p;
}

// Violating windows by construction, per grid window (each burst starts on a window boundary
// for W ≤ 60 and fits inside one window for W ≥ 60):
//   0.5: 2+4+8+16+32 = 62 of 1200      1: 1+2+4+8+16 = 31 of 600
//   2: b=1 is not > 1; 1+2+4+8 = 15 of 300
//   5: b=4 → 1; b=8 → 1 full + 3 s of 5 → 2; b=16 → 3 full + 1 s of 5 → 3; total 6 of 120
//   10: b=8 → 1; b=16 → 1 full + 6 s of 10 → 2; total 3 of 60
//   15: b=8 → 1 (8 > 7.5); b=16 → 1 full + 1 s → 1; total 2 of 40
//   30: b=16 → 1 (16 > 15); total 1 of 20       60, 120, 300: none
struct Expect {
  double window_s;
  int64_t violations, windows;
};
const Expect kExpect[] = {{0.5, 62, 1200}, {1, 31, 600}, {2, 15, 300}, {5, 6, 120}, {10, 3, 60},
                          {15, 2, 40},     {30, 1, 20},  {60, 0, 10},  {120, 0, 5}, {300, 0, 2}};

TEST(WindowsCurve, ViolationRateKnownByConstruction) {
  const WindowsCurve c = windows_curve(burst_series(), 0.5, 150.0, 0.0);
  ASSERT_EQ(c.points.size(), std::size(kExpect));
  for (size_t i = 0; i < c.points.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "window " << kExpect[i].window_s);
    EXPECT_EQ(c.points[i].window_s, kExpect[i].window_s);
    EXPECT_EQ(c.points[i].windows, kExpect[i].windows);
    EXPECT_EQ(c.points[i].violations, kExpect[i].violations);
    EXPECT_DOUBLE_EQ(c.points[i].violation_rate,
                     static_cast<double>(kExpect[i].violations) / kExpect[i].windows);
    if (i > 0) {
      EXPECT_LE(c.points[i].violation_rate, c.points[i - 1].violation_rate);
    }
  }
  EXPECT_EQ(c.shortest_holding_window_s, 60);
}

TEST(WindowsCurve, ToleranceMovesTheShortestHoldingWindow) {
  // Rates: 0.0517, 0.0517, 0.05, 0.05, 0.05, 0.05, 0.05, 0, 0, 0.
  EXPECT_EQ(windows_curve(burst_series(), 0.5, 150.0, 0.05).shortest_holding_window_s, 2);
  EXPECT_EQ(windows_curve(burst_series(), 0.5, 150.0, 0.06).shortest_holding_window_s, 0.5);
  EXPECT_EQ(windows_curve(burst_series(), 0.5, 150.0, 0.049).shortest_holding_window_s, 60);
}

TEST(WindowsCurve, AFailingLongWindowMeansNoHoldingWindow) {
  // Constant 200 W over a 150 W budget: every window violates.
  const WindowsCurve c = windows_curve(std::vector<double>(1200, 200.0), 0.5, 150.0, 0.0);
  EXPECT_TRUE(std::isnan(c.shortest_holding_window_s));
  // A non-monotone curve: holding at 10 s but failing at 30 s gives 60 s, not 10 s.
  std::vector<WindowStats> s(4);
  const double w[] = {5, 10, 30, 60};
  const double rate[] = {0.2, 0.0, 0.1, 0.0};
  for (int i = 0; i < 4; ++i) {
    s[i].window_s = w[i];
    s[i].windows = 10;
    s[i].violation_rate = rate[i];
  }
  EXPECT_EQ(windows_curve(s, 0.0).shortest_holding_window_s, 60);
}

TEST(WindowsCurve, PointsWithoutWindowsHaveNoVerdict) {
  // 20 s of data: the 60 s window judges nothing and is passed over.
  const WindowsCurve c =
      windows_curve(std::vector<double>(40, 100.0), 0.5, 150.0, 0.0, {1, 10, 60});
  EXPECT_EQ(c.points[2].windows, 0);
  EXPECT_FALSE(c.holds(2));
  EXPECT_EQ(c.shortest_holding_window_s, 1);
}

TEST(WindowMeans, KeptOnlyWhenAskedAndIncludeTheOpenWindow) {
  WindowAccumulator off(10, 1e9), on(10, 1e9);
  on.keep_means(true);
  for (int i = 0; i < 50; ++i) {  // 25 s at 0.5 s: windows [0,10), [10,20), [20,25) open
    off.add(i * 0.5, i < 20 ? 100.0 : 300.0, 0.5);
    on.add(i * 0.5, i < 20 ? 100.0 : 300.0, 0.5);
  }
  EXPECT_TRUE(off.means().empty());
  ASSERT_EQ(on.means().size(), 3u);
  EXPECT_DOUBLE_EQ(on.means()[0], 100);
  EXPECT_DOUBLE_EQ(on.means()[1], 300);
  EXPECT_DOUBLE_EQ(on.means()[2], 300);
  EXPECT_EQ(on.finish().windows, 3);
}

TEST(Oversubscription, QuantileAndRatioMatchTheClosedForm) {
  // 20 windows of 30 s with means 100, 110, …, 290 W (a staircase), in shuffled order.
  std::vector<double> p;
  const int order[] = {7, 3, 19, 0, 12, 5, 18, 1, 9, 14, 2, 16, 8, 11, 4, 17, 6, 13, 10, 15};
  for (int k : order) p.insert(p.end(), 60, 100.0 + 10.0 * k);
  WindowAccumulator acc(30, 1e9);
  acc.keep_means(true);
  for (size_t i = 0; i < p.size(); ++i) acc.add(static_cast<double>(i) * 0.5, p[i], 0.5);
  const std::vector<double> means = acc.means();
  ASSERT_EQ(means.size(), 20u);
  // tol 0: P = peak = 290 W; ratio = 1000 / 290.
  Oversubscription o = oversubscription(means, 30, 0.0, 1000);
  EXPECT_DOUBLE_EQ(o.provisioned_w, 290);
  EXPECT_DOUBLE_EQ(o.ratio, 1000.0 / 290);
  EXPECT_DOUBLE_EQ(o.share_of_nameplate, 0.29);
  EXPECT_EQ(o.windows_above, 0);
  // tol 0.1: k = ⌊0.1·20⌋ = 2 windows may exceed: P = 18th smallest = 270 W.
  o = oversubscription(means, 30, 0.1, 1000);
  EXPECT_DOUBLE_EQ(o.provisioned_w, 270);
  EXPECT_EQ(o.windows_above, 2);
  EXPECT_DOUBLE_EQ(o.ratio, 1000.0 / 270);
  // tol 0.12: still ⌊2.4⌋ = 2.
  EXPECT_DOUBLE_EQ(oversubscription(means, 30, 0.12, 1000).provisioned_w, 270);
  // No nameplate: P only.
  o = oversubscription(means, 30, 0.0, std::nan(""));
  EXPECT_DOUBLE_EQ(o.provisioned_w, 290);
  EXPECT_TRUE(std::isnan(o.ratio));
  // No windows.
  EXPECT_TRUE(std::isnan(oversubscription({}, 30, 0.0, 1000).provisioned_w));
}

TEST(Cost, MatchesHandArithmetic) {
  CostInputs in;
  in.energy_j = 3.6e9;  // 1000 kWh
  in.mean_power_w = 1000;
  in.tokens = 2e6;
  in.nameplate_per_gpu_w = 400;
  in.oversubscription_ratio = 2;
  const CostReport r = cost_report(in);  // defaults $0.08/kWh, 0.25 kg/kWh
  EXPECT_DOUBLE_EQ(r.energy_kwh, 1000);
  EXPECT_NEAR(r.cost_usd, 80, 1e-9);
  EXPECT_NEAR(r.co2_kg, 250, 1e-9);
  EXPECT_NEAR(r.usd_per_million_tokens, 40, 1e-9);
  EXPECT_NEAR(r.annual_energy_mwh, 8.76, 1e-9);  // 1 kW × 8760 h
  EXPECT_NEAR(r.annual_cost_usd, 700.8, 1e-9);
  EXPECT_NEAR(r.annual_co2_t, 2.19, 1e-9);
  EXPECT_DOUBLE_EQ(r.gpus_per_mw_nameplate, 2500);
  EXPECT_DOUBLE_EQ(r.gpus_per_mw_oversubscribed, 5000);
  EXPECT_DOUBLE_EQ(r.extra_gpus_per_mw, 2500);
  CostOptions o;
  o.price_per_kwh = 0.2;
  o.kg_co2_per_kwh = 0.5;
  const CostReport r2 = cost_report(in, o);
  EXPECT_NEAR(r2.cost_usd, 200, 1e-9);
  EXPECT_NEAR(r2.co2_kg, 500, 1e-9);
  in.nameplate_per_gpu_w = std::nan("");
  EXPECT_TRUE(std::isnan(cost_report(in).gpus_per_mw_nameplate));
}

}  // namespace
}  // namespace fw

#include "analysis/windows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fw {
namespace {

// Square wave: kHighW for the first half of each cycle, kLowW for the second half.
constexpr double kHighW = 400, kLowW = 200, kBudgetW = 300;

double high_time_in(double a, double b, double half_cycle_s) {
  // Time within [a, b) where the wave is high; the wave is high on [2k·h, (2k+1)·h).
  double t = 0;
  for (int k = 0; 2.0 * k * half_cycle_s < b; ++k) {
    const double lo = std::max(a, 2.0 * k * half_cycle_s);
    const double hi = std::min(b, (2.0 * k + 1) * half_cycle_s);
    if (hi > lo) t += hi - lo;
  }
  return t;
}

// Feeds a square wave sampled every dt_s over [0, total_s) and compares every window length
// with the expectation computed window by window from the wave's definition.
void check_square_wave(double half_cycle_s, double dt_s, double total_s, double window_s) {
  WindowAccumulator acc(window_s, kBudgetW);
  const int n = static_cast<int>(std::lround(total_s / dt_s));
  for (int i = 0; i < n; ++i) {
    const double t = i * dt_s;
    const bool high = std::fmod(t, 2 * half_cycle_s) < half_cycle_s;
    acc.add(t, high ? kHighW : kLowW, dt_s);
  }
  const WindowStats s = acc.finish();

  int64_t windows = 0, violations = 0;
  double peak = 0, over_j = 0;
  for (int k = 0; k * window_s < total_s; ++k) {
    const double a = k * window_s, b = std::min(total_s, (k + 1) * window_s);
    const double covered = b - a;
    if (covered < 0.5 * window_s) continue;
    const double th = high_time_in(a, b, half_cycle_s);
    const double mean = (th * kHighW + (covered - th) * kLowW) / covered;
    ++windows;
    peak = std::max(peak, mean);
    if (mean > kBudgetW) {
      ++violations;
      over_j += (mean - kBudgetW) * covered;
    }
  }
  SCOPED_TRACE("window " + std::to_string(window_s));
  EXPECT_EQ(s.windows, windows);
  EXPECT_EQ(s.violations, violations);
  EXPECT_EQ(s.violation_rate, static_cast<double>(violations) / static_cast<double>(windows));
  EXPECT_DOUBLE_EQ(s.peak_mean_w, peak);
  EXPECT_NEAR(s.energy_over_budget_j, over_j, 1e-9 * (1 + over_j));
}

TEST(Windows, SquareWaveRatesKnownByConstruction) {
  // 10 s high / 10 s low, 0.5 s samples, 600 s.
  for (double w : {0.5, 1.0, 10.0, 15.0, 30.0, 60.0, 300.0, 7.5, 25.0}) {
    check_square_wave(10, 0.5, 600, w);
  }
}

TEST(Windows, SquareWaveExactFigures) {
  // Rates written out by hand for the 10 s/10 s wave over 600 s, budget 300 W.
  auto run = [](double w) {
    WindowAccumulator acc(w, kBudgetW);
    for (int i = 0; i < 1200; ++i) {
      const double t = i * 0.5;
      acc.add(t, std::fmod(t, 20.0) < 10.0 ? kHighW : kLowW, 0.5);
    }
    return acc.finish();
  };
  // 0.5 s and 10 s windows see pure high or pure low: half violate.
  EXPECT_EQ(run(0.5).violation_rate, 0.5);
  EXPECT_EQ(run(0.5).windows, 1200);
  EXPECT_EQ(run(10).violation_rate, 0.5);
  EXPECT_EQ(run(10).peak_mean_w, 400);
  EXPECT_EQ(run(10).energy_over_budget_j, 30 * 100 * 10);
  // 20 s and 300 s windows hold whole cycles: mean exactly 300 W, not above: no violation.
  EXPECT_EQ(run(20).violation_rate, 0);
  EXPECT_EQ(run(20).peak_mean_w, 300);
  EXPECT_EQ(run(300).violation_rate, 0);
  EXPECT_EQ(run(300).windows, 2);
  // 30 s windows alternate 20 s high + 10 s low (mean 333.3) and 10 s high + 20 s low.
  EXPECT_EQ(run(30).windows, 20);
  EXPECT_EQ(run(30).violations, 10);
  EXPECT_EQ(run(30).violation_rate, 0.5);
  // 15 s windows, 4 per 40 s: [0,15) and [15,30) hold 10 s high (333.3 W, violate),
  // [30,45) and [45,60) hold 5 s high (266.7 W).
  EXPECT_EQ(run(15).violation_rate, 0.5);
}

TEST(Windows, FloatingPointSampleTimesDoNotLeakSlivers) {
  // 0.1 s samples: k·0.1 is inexact, but each 0.5 s window must hold exactly 5 samples.
  WindowAccumulator acc(0.5, 250);
  for (int i = 0; i < 1000; ++i) acc.add(i * 0.1, (i / 5) % 2 ? 300.0 : 200.0, 0.1);
  const WindowStats s = acc.finish();
  EXPECT_EQ(s.windows, 200);
  EXPECT_EQ(s.violations, 100);
  EXPECT_EQ(s.skipped, 0);
  EXPECT_NEAR(s.peak_mean_w, 300, 1e-9);
}

TEST(Windows, SampleStraddlingABoundaryIsSplit) {
  WindowAccumulator acc(1.0, 150);
  acc.add(0.0, 100, 0.5);
  acc.add(0.5, 200, 1.0);  // half in window 0, half in window 1
  acc.add(1.5, 100, 0.5);
  const WindowStats s = acc.finish();
  EXPECT_EQ(s.windows, 2);
  EXPECT_EQ(s.violations, 0);  // both windows average exactly 150
  EXPECT_DOUBLE_EQ(s.peak_mean_w, 150);
}

TEST(Windows, TrailingPartialWindowNeedsHalfCoverage) {
  auto windows_for = [](double total_s) {
    WindowAccumulator acc(30, 100);
    for (double t = 0; t < total_s; t += 0.5) acc.add(t, 500, 0.5);
    return acc.finish();
  };
  EXPECT_EQ(windows_for(610).windows, 20);  // last window covers 10 s < 15 s
  EXPECT_EQ(windows_for(610).skipped, 1);
  EXPECT_EQ(windows_for(620).windows, 21);  // 20 s ≥ 15 s
  EXPECT_EQ(windows_for(615).windows, 21);  // exactly half counts
}

TEST(Windows, GapsCountOnlyCoveredTime) {
  // 10 s windows; samples cover [0, 3) at 1000 W and [20, 30) at 100 W: window 0 is under half
  // covered (skipped), window 1 has no sample (skipped), window 2 is judged at 100 W.
  WindowAccumulator acc(10, 500);
  for (int i = 0; i < 3; ++i) acc.add(i, 1000, 1);
  for (int i = 20; i < 30; ++i) acc.add(i, 100, 1);
  const WindowStats s = acc.finish();
  EXPECT_EQ(s.windows, 1);
  EXPECT_EQ(s.skipped, 2);
  EXPECT_EQ(s.violations, 0);
  EXPECT_EQ(s.peak_mean_w, 100);
}

TEST(Windows, InfiniteBudgetTracksMeansOnly) {
  WindowAccumulator acc(1, std::numeric_limits<double>::infinity());
  for (int i = 0; i < 10; ++i) acc.add(i, 1e6, 1);
  const WindowStats s = acc.finish();
  EXPECT_EQ(s.violations, 0);
  EXPECT_EQ(s.energy_over_budget_j, 0);
  EXPECT_EQ(s.peak_mean_w, 1e6);
}

TEST(Windows, FinishIsRepeatableAndAddContinues) {
  WindowAccumulator acc(2, 100);
  acc.add(0, 200, 1);
  const WindowStats a = acc.finish();
  EXPECT_EQ(a.windows, 1);  // open window is half covered
  acc.add(1, 0, 1);
  const WindowStats b = acc.finish();
  EXPECT_EQ(b.windows, 1);
  EXPECT_EQ(b.violations, 0);
  EXPECT_EQ(b.peak_mean_w, 100);
}

TEST(Windows, AnalyzeWindowsConvenience) {
  std::vector<double> p;
  for (int i = 0; i < 40; ++i) p.push_back(i % 4 < 2 ? 400 : 200);
  const auto s = analyze_windows(p, 0.25, 300, {0.5, 1.0});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].violation_rate, 0.5);
  EXPECT_EQ(s[1].violation_rate, 0);
  EXPECT_EQ(s[1].peak_mean_w, 300);
}

TEST(Windows, MeanExactlyAtBudgetNeverViolatesWhateverTheSummationOrder) {
  // Powers whose mean is exactly 700 W in exact arithmetic but whose floating-point sum
  // depends on order: 0.1-W steps around the budget, in two orders.
  std::vector<double> p;
  for (int i = 0; i < 100; ++i) p.push_back(700 + 0.1 * ((i % 10) - 4.5));
  for (bool reversed : {false, true}) {
    WindowAccumulator acc(10, 700);
    for (int i = 0; i < 100; ++i) {
      const int k = reversed ? 99 - i : i;
      acc.add(0.1 * i, p[k], 0.1);
    }
    const WindowStats st = acc.finish();
    EXPECT_EQ(st.windows, 1);
    EXPECT_NEAR(st.peak_mean_w, 700, 1e-9);
    EXPECT_EQ(st.violations, 0) << reversed;
  }
  // Above by more than the 1e-9 relative tolerance: a violation.
  WindowAccumulator acc(1, 700);
  acc.add(0, 700 * (1 + 1e-8), 1);
  EXPECT_EQ(acc.finish().violations, 1);
}

}  // namespace
}  // namespace fw

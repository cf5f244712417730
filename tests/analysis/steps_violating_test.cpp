#include "analysis/steps_violating.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace fw {
namespace {

// Samples every 0.5 s; steps of step_s; power from f(t).
template <class F>
StepViolationStats run(double budget_w, double window_s, double step_s, double duration_s, F f) {
  StepViolationCounter c(budget_w, window_s);
  for (int k = 1; k * 0.5 <= duration_s + 1e-9; ++k) {
    const double t = k * 0.5;
    c.add(t, f(t), std::floor(t / step_s));
  }
  return c.stats();
}

TEST(StepsViolating, SteadyBelowBudgetNeverViolates) {
  const auto s = run(300, 30, 50, 1000, [](double) { return 299.0; });
  EXPECT_EQ(s.steps, 20);  // steps 0..19; step 20 begins at the last sample
  EXPECT_EQ(s.violating, 0);
  EXPECT_DOUBLE_EQ(s.share(), 0.0);
}

TEST(StepsViolating, SteadyAboveBudgetViolatesEveryJudgedStep) {
  const auto s = run(300, 30, 50, 1000, [](double) { return 301.0; });
  EXPECT_EQ(s.steps, 20);
  EXPECT_EQ(s.violating, 20);  // the first step holds t = 30..50, judged
}

TEST(StepsViolating, ShortBurstsAreSmoothedByTheWindow) {
  // 10 s at 500 W, 40 s at 200 W per 50 s step: trailing 30 s mean peaks at 300 W.
  auto f = [](double t) { return std::fmod(t, 50.0) < 10.0 ? 500.0 : 200.0; };
  EXPECT_EQ(run(300, 30, 50, 1000, f).violating, 0);
  // Step 0 is judged from t = 30.5 only, when its burst is partly out of the window.
  EXPECT_EQ(run(299, 30, 50, 1000, f).violating, 19);
  // At a 1 s window every step with a burst violates.
  EXPECT_EQ(run(400, 1, 50, 1000, f).violating, 20);
}

TEST(StepsViolating, OnlyTheStepsHoldingTheBreachCount) {
  // One 40 s burst at 400 W from t = 210 (inside step 4 = [200, 250)); 200 W otherwise.
  auto f = [](double t) { return t > 210 && t <= 250 ? 400.0 : 200.0; };
  const auto s = run(300, 30, 50, 1000, f);
  EXPECT_EQ(s.steps, 20);
  // The trailing mean crosses 300 W at t = 225 (step 4) and stays above until t = 265 (step 5).
  EXPECT_EQ(s.violating, 2);
}

TEST(StepsViolating, NoPartialWindowAtTheStart) {
  auto f = [](double t) { return t < 5 ? 1000.0 : 100.0; };
  EXPECT_EQ(run(300, 30, 50, 200, f).violating, 0);
}

}  // namespace
}  // namespace fw

#include "control/window_judge.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "analysis/windows.hpp"
#include "control/episode_metrics.hpp"

namespace fw {
namespace {

using Rule = WindowJudge::Rule;

// Feeds one unit's ratios; returns the mean judged at each sample (NaN: none judged).
std::vector<double> judge_series(WindowJudge& j, const std::vector<double>& ratios) {
  std::vector<double> out;
  for (double r : ratios) {
    j.set(0, r);
    out.push_back(j.advance() ? j.mean(0) : std::nan(""));
  }
  return out;
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "sample " << i << " judged " << got[i];
    } else {
      EXPECT_DOUBLE_EQ(got[i], want[i]) << "sample " << i;
    }
  }
}

const double kNone = std::nan("");
const std::vector<double> kSeries = {1, 1, 1, 2, 0, 0, 0, 0, 3, 3};

TEST(WindowJudge, TumblingJudgesEachWholeWindowAtItsLastSample) {
  WindowJudge j;
  j.reset(Rule::kTumbling, 1, 4);
  expect_same(judge_series(j, kSeries),
              {kNone, kNone, kNone, 1.25, kNone, kNone, kNone, 0.0, kNone, kNone});
  // The open window holds two of four samples: half, so it is judged.
  EXPECT_EQ(j.open_samples(), 2u);
  EXPECT_TRUE(j.open_judged());
  EXPECT_DOUBLE_EQ(j.open_mean(0), 3.0);
  j.set(0, 5);
  EXPECT_TRUE(!j.advance());
  j.set(0, 5);
  EXPECT_TRUE(j.advance());  // 3 3 5 5
  EXPECT_DOUBLE_EQ(j.mean(0), 4.0);
  EXPECT_EQ(j.open_samples(), 0u);
  EXPECT_FALSE(j.open_judged());
  j.set(0, 9);
  j.advance();
  EXPECT_FALSE(j.open_judged());  // one of four: less than half
}

TEST(WindowJudge, SlidingJudgesTheTrailingWindowAtEverySampleOnceFull) {
  WindowJudge j;
  j.reset(Rule::kSliding, 1, 4);
  expect_same(judge_series(j, kSeries),
              {kNone, kNone, kNone, 1.25, 1.0, 0.75, 0.5, 0.0, 0.75, 1.5});
  EXPECT_EQ(j.open_samples(), 0u);  // no open window under the sliding rule
}

// A 2-sample burst at twice the budget across a tumbling boundary: each tumbling window is
// exactly at budget (not over), the sliding rule sees a window at 1.5.
TEST(WindowJudge, SlidingCatchesWhatTumblingLetsThrough) {
  const std::vector<double> burst = {0.5, 0.5, 0.5, 2, 2, 0.5, 0.5, 0.5};
  WindowJudge tumbling, sliding;
  tumbling.reset(Rule::kTumbling, 1, 4);
  sliding.reset(Rule::kSliding, 1, 4);
  int tumbling_over = 0, sliding_over = 0;
  for (double m : judge_series(tumbling, burst)) tumbling_over += m > 1.0;
  for (double m : judge_series(sliding, burst)) sliding_over += m > 1.0;
  EXPECT_EQ(tumbling_over, 0);
  EXPECT_EQ(sliding_over, 3);  // windows ending at samples 4, 5 and 6 (1.25, 1.25, 1.25)
}

TEST(WindowJudge, UnitsAreJudgedSeparately) {
  WindowJudge j;
  j.reset(Rule::kTumbling, 2, 2);
  j.set(0, 1);
  j.set(1, 10);
  EXPECT_FALSE(j.advance());
  j.set(0, 3);
  j.set(1, 20);
  ASSERT_TRUE(j.advance());
  EXPECT_DOUBLE_EQ(j.mean(0), 2);
  EXPECT_DOUBLE_EQ(j.mean(1), 15);
}

// The oracle's alignment: a window of which samples were never seen closes on time and is
// judged on the samples fed to it.
TEST(WindowJudge, UnseenSamplesAlignTheFirstTumblingWindow) {
  WindowJudge j;
  j.reset(Rule::kTumbling, 1, 4, /*unseen=*/2);
  expect_same(judge_series(j, {1, 3, 1, 1, 1, 1}), {kNone, 2.0, kNone, kNone, kNone, 1.0});
}

TEST(WindowJudge, SamplesPerWindowRoundsAndIsAtLeastOne) {
  EXPECT_EQ(WindowJudge::samples_per_window(30, 0.5), 60u);
  EXPECT_EQ(WindowJudge::samples_per_window(2.4, 0.5), 5u);
  EXPECT_EQ(WindowJudge::samples_per_window(0.1, 0.5), 1u);
}

// The judge agrees with the episode metrics (tumbling: analysis/windows.hpp's accumulator;
// sliding: the judge inside EpisodeMetrics) on a series with over- and under-budget windows.
TEST(WindowJudge, AgreesWithEpisodeMetrics) {
  PlantInfo info;
  info.gpus.push_back({"test", 100, 400, 400, 400});
  BudgetSchedule budget;
  budget.entries.push_back({0, {100.0, BudgetScope::kGpu, 2.0}});  // 4 samples of 0.5 s
  EpisodeMetrics m(info, budget, {2.0});
  WindowJudge tumbling, sliding;
  tumbling.reset(Rule::kTumbling, 1, 4);
  sliding.reset(Rule::kSliding, 1, 4);
  int64_t t_windows = 0, t_over = 0, s_checks = 0, s_over = 0;
  double worst = 0;
  for (int i = 0; i < 40; ++i) {
    const double p = 30 + 13.0 * ((i * 7) % 11);  // 30 … 160 W, irregular
    Snapshot s;
    s.time_s = 0.5 * i;
    GpuReading g;
    g.power_w = p;
    s.gpus.push_back(g);
    m.add(s, 0.5);
    tumbling.set(0, p / 100);
    sliding.set(0, p / 100);
    if (tumbling.advance()) {
      ++t_windows;
      t_over += tumbling.mean(0) > 1.0;
      worst = std::max(worst, tumbling.mean(0));
    }
    if (sliding.advance()) {
      ++s_checks;
      s_over += sliding.mean(0) > 1.0;
    }
  }
  const EpisodeResult r = m.finish();
  ASSERT_EQ(r.windows_judged.size(), 1u);
  EXPECT_EQ(r.windows_judged[0], t_windows);
  ASSERT_GT(t_over, 0);
  ASSERT_LT(t_over, t_windows);  // the series tests both verdicts
  EXPECT_DOUBLE_EQ(r.violation_rate[0], static_cast<double>(t_over) / t_windows);
  EXPECT_DOUBLE_EQ(r.worst_window_ratio[0], worst);
  ASSERT_GT(s_over, 0);
  EXPECT_DOUBLE_EQ(r.sliding_violation_rate, static_cast<double>(s_over) / s_checks);
}

}  // namespace
}  // namespace fw

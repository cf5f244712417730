#include "control/episode_metrics.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

// One GPU, budget 100 W judged over 2 s, samples every 0.5 s. A 2 s burst at 200 W placed
// across the boundary of two tumbling windows leaves each at exactly the budget (no
// violation), while the trailing 2 s mean is above it at three of the five full-window
// samples: the sliding check catches what tumbling windows let through.
TEST(EpisodeMetrics, SlidingCheckCatchesBurstsAcrossTumblingBoundaries) {
  PlantInfo info;
  info.gpus.push_back({"test", 100, 400, 400, 400});
  BudgetSchedule budget;
  budget.entries.push_back({0, {100.0, BudgetScope::kGpu, 2.0}});
  EpisodeMetrics m(info, budget, {2.0});
  const double power_w[] = {0, 0, 200, 200, 200, 200, 0, 0};
  for (int i = 0; i < 8; ++i) {
    Snapshot s;
    s.time_s = 0.5 * i;
    GpuReading g;
    g.power_w = power_w[i];
    s.gpus.push_back(g);
    m.add(s, 0.5);
  }
  const EpisodeResult r = m.finish();
  ASSERT_EQ(r.violation_rate.size(), 1u);
  EXPECT_EQ(r.windows_judged[0], 2);
  EXPECT_DOUBLE_EQ(r.violation_rate[0], 0.0);
  EXPECT_DOUBLE_EQ(r.sliding_violation_rate, 3.0 / 5.0);
}

}  // namespace
}  // namespace fw

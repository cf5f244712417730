// Job churn: a job's `end_s` (its departure; `start_s` is its arrival). After end_s the job
// makes no progress and its GPU idles without a CUDA context; a bad end_s is an error naming
// the field; the shipped churn scenario loads with its schedule.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim {
namespace {

std::string two_jobs(const std::string& extra0) {
  return "name: t\ngpus: [{model: a100-sxm4-80gb, count: 2}]\nbudget: {watts: 800}\n"
         "sim: {noise_w: 0}\njobs:\n"
         "  - {kind: grpo, model: qwen2.5-7b" +
         extra0 +
         "}\n"
         "  - {kind: grpo, model: qwen2.5-7b}\n";
}

TEST(JobChurn, AJobStopsAtItsEndAndItsGpuIdles) {
  auto s = parse_scenario(two_jobs(", end_s: 300"), "t", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_DOUBLE_EQ(s->jobs[0].end_s, 300);
  EXPECT_TRUE(std::isinf(s->jobs[1].end_s));
  auto plant = make_plant(*s, 1);
  Snapshot snap;
  double tokens_at_end = 0, steps_at_end = 0, p_before = 0, p_after = 0, p_other = 0;
  int n_before = 0, n_after = 0;
  for (int k = 1; k <= 1200; ++k) {
    const double t = 0.5 * k;
    ASSERT_TRUE(plant->read(t, snap).ok());
    if (t <= 300) {
      tokens_at_end = snap.jobs[0].tokens_total;
      steps_at_end = snap.jobs[0].steps_total;
      if (t > 60) p_before += snap.gpus[0].power_w, ++n_before;
    } else if (t > 310) {
      p_after += snap.gpus[0].power_w, ++n_after;
      p_other += snap.gpus[1].power_w;
    }
  }
  EXPECT_GT(steps_at_end, 2);
  EXPECT_DOUBLE_EQ(snap.jobs[0].tokens_total, tokens_at_end);  // no progress after end_s
  EXPECT_DOUBLE_EQ(snap.jobs[0].steps_total, steps_at_end);
  EXPECT_GT(snap.jobs[1].steps_total, 2 * steps_at_end);  // the other job runs on
  p_before /= n_before;
  p_after /= n_after;
  p_other /= n_after;
  EXPECT_LT(p_after, 0.5 * p_before);  // idle, no context
  EXPECT_LT(p_after, 0.5 * p_other);
}

TEST(JobChurn, BadEndIsAnErrorNamingTheField) {
  auto s = parse_scenario(two_jobs(", start_s: 100, end_s: 100"), "t", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("end_s"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("after start_s"), std::string::npos);
}

TEST(JobChurn, ShippedChurnScenarioHasArrivalsAndDepartures) {
  auto s =
      load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/fleet-16xa100-churn.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  int arrivals = 0, departures = 0;
  for (const JobSpec& j : s->jobs) {
    arrivals += j.start_s > 0;
    departures += std::isfinite(j.end_s);
  }
  EXPECT_EQ(arrivals, 3);
  EXPECT_EQ(departures, 3);
}

}  // namespace
}  // namespace fw::sim

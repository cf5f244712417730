#include "control/stepper.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "control/actuator.hpp"
#include "control/control_loop.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "test_plant.hpp"

namespace fw {
namespace {

using testing::FirstOrderPlant;
using testing::one_budget;

TEST(Stepper, TickMaths) {
  EXPECT_EQ(episode_ticks(600, 0.5), 1200);
  EXPECT_EQ(episode_ticks(0.1, 0.5), 1);  // at least one tick
  EXPECT_EQ(episode_ticks(1.2, 0.5), 2);  // rounded
  EXPECT_EQ(ticks_per_period(0.5, 0.5), 1);
  EXPECT_EQ(ticks_per_period(0.7, 0.5), 2);  // rounded up
  EXPECT_EQ(ticks_per_period(10, 0.5), 20);
  EXPECT_EQ(ticks_per_period(0.1, 0.5), 1);
  EXPECT_EQ(history_capacity(300, 0.5), 601u);
  EXPECT_EQ(history_capacity(0, 0.5), 1u);
}

TEST(Stepper, SenseReadsAtTickTimesIntoHistoryAndMetrics) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  EpisodeMetrics metrics(plant.info(), budget);
  Stepper st(0.5, /*history_s=*/2.0);
  st.set_metrics(&metrics);
  st.begin(plant, &budget);
  for (int k = 0; k < 10; ++k, st.advance()) {
    ASSERT_TRUE(st.sense().ok());
    EXPECT_EQ(st.latest().time_s, 0.5 * k);
    EXPECT_EQ(st.observation().time_s, 0.5 * k);
  }
  EXPECT_EQ(st.tick(), 10);
  ASSERT_EQ(st.history().size(), 5u);  // 2 s of history: ceil(2 / 0.5) + 1 snapshots
  EXPECT_EQ(st.history().newest().time_s, 4.5);
  EXPECT_EQ(st.history().at_age(4).time_s, 2.5);
  EXPECT_EQ(st.observation().budget->watts, 300);
  EXPECT_EQ(st.units().size(), 1u);  // node scope: one unit
  EXPECT_DOUBLE_EQ(metrics.finish().duration_s, 5.0);
  // A new episode starts over: tick 0, empty history.
  st.begin(plant, &budget);
  EXPECT_EQ(st.tick(), 0);
  EXPECT_TRUE(st.history().empty());
}

TEST(Stepper, ActLimitsThenWritesOnlyWhatIsSet) {
  FirstOrderPlant plant(1);
  const BudgetSchedule budget = one_budget(300);
  Stepper st(0.5, 10);
  st.begin(plant, &budget);
  ASSERT_TRUE(st.sense().ok());
  Command c = blank_command(plant.info());
  ASSERT_TRUE(st.act(c).ok());
  EXPECT_EQ(plant.writes(), 0);  // nothing set: nothing written
  c.knobs[0][0] = 100;           // above the range 1..16: the limiter clamps it
  c.knobs[0][1] = 4;
  ASSERT_TRUE(st.act(c).ok());
  EXPECT_EQ(plant.writes(), 1);
  EXPECT_EQ(plant.knobs()[1], 4);
  EXPECT_EQ(plant.bad_writes(), 0);
  EXPECT_EQ(st.limiter().stats().clamped, 1);
  // write() is unlimited: the plant sees (and rejects) the raw request.
  EXPECT_FALSE(st.write(c).ok());
  EXPECT_EQ(plant.bad_writes(), 1);
  EXPECT_FALSE(blank_command(plant.info()).any_set());
  EXPECT_TRUE(c.any_set());
}

// The oracle's look-ahead: a clone stepped from the decision's time, tick 1 first.
TEST(Stepper, StartsFromAGivenTimeAndTick) {
  FirstOrderPlant plant(1);
  Stepper st(0.5, 0);
  st.begin(plant, nullptr, /*start_s=*/10.0, /*first_tick=*/1);
  ASSERT_TRUE(st.sense().ok());
  EXPECT_EQ(st.latest().time_s, 10.5);
  st.advance();
  ASSERT_TRUE(st.sense().ok());
  EXPECT_EQ(st.latest().time_s, 11.0);
  EXPECT_EQ(st.history().size(), 1u);
}

// ControlLoop is the stepper plus a controller schedule: stepping by hand gives the same
// episode, bit for bit.
TEST(Stepper, ControlLoopStepsThroughIt) {
  const BudgetSchedule budget = one_budget(300);
  LoopConfig lc;
  lc.duration_s = 120;
  FirstOrderPlant a(3);
  UncontrolledController ua;
  ControlLoop loop(a, budget, lc);
  loop.add_controller(&ua);
  ASSERT_TRUE(loop.run().ok());
  const EpisodeResult want = loop.result();

  FirstOrderPlant b(3);
  UncontrolledController ub;
  ub.reset(b.info());
  EpisodeMetrics metrics(b.info(), budget, lc.windows_s);
  Stepper st(lc.sample_period_s, lc.history_s);
  st.set_metrics(&metrics);
  st.begin(b, &budget);
  for (int64_t k = 0; k < episode_ticks(lc.duration_s, lc.sample_period_s); ++k, st.advance()) {
    ASSERT_TRUE(st.sense().ok());
    if (k % ticks_per_period(ub.period_s(), lc.sample_period_s) == 0) {
      ASSERT_TRUE(st.act(ub.update(st.observation())).ok());
    }
  }
  const EpisodeResult got = metrics.finish(st.limiter().stats());
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.energy_j, want.energy_j);
  // Bit for bit, NaN (a window longer than the run: no verdict) included.
  ASSERT_EQ(got.violation_rate.size(), want.violation_rate.size());
  EXPECT_EQ(std::memcmp(got.violation_rate.data(), want.violation_rate.data(),
                        got.violation_rate.size() * sizeof(double)),
            0);
  EXPECT_EQ(got.sliding_violation_rate, want.sliding_violation_rate);
  EXPECT_GT(got.tokens, 0);
}

// A plant whose job set can grow between episodes, as the agent's does when a job registers.
class GrowingPlant : public Plant {
 public:
  GrowingPlant() {
    info_.gpus.push_back({"test-gpu", 100, 400, 400, 400});
    add_job();
  }
  void add_job() {
    JobInfo j;
    j.name = "job" + std::to_string(info_.jobs.size());
    j.gpus = {0};
    j.knob_ranges[0] = {true, 1, 16, 1};
    j.default_knobs[0] = 16;
    info_.jobs.push_back(j);
  }
  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override {
    out.time_s = now_s;
    out.gpus.assign(1, GpuReading{});
    out.gpus[0].power_w = 200;
    out.gpus[0].cap_w = 400;
    out.jobs.assign(info_.jobs.size(), JobReading{});
    for (size_t j = 0; j < out.jobs.size(); ++j) out.jobs[j].knobs[0] = 16;
    return Status::Ok();
  }
  Status write(const Command&) override { return Status::Ok(); }

 private:
  PlantInfo info_;
};

// An episode begun mid-run (the agent restarts one at the current tick when its job set or
// budget changes) re-sizes the limiter to the plant's jobs at its first sense(). Before, the
// limiter kept the first episode's size and act() wrote past its per-job state.
TEST(Stepper, EpisodeBegunMidRunResizesTheLimiterToTheJobSet) {
  GrowingPlant plant;
  const BudgetSchedule budget = one_budget(300);
  Stepper st(0.5, 10);
  st.begin(plant, &budget);
  for (int k = 0; k < 3; ++k, st.advance()) ASSERT_TRUE(st.sense().ok());
  plant.add_job();
  plant.add_job();
  st.begin(plant, &budget, 0, st.tick());
  ASSERT_TRUE(st.sense().ok());
  ASSERT_EQ(st.limiter().knobs().size(), 3u);
  Command c = blank_command(plant.info());
  for (auto& k : c.knobs) k[0] = 8;
  ASSERT_TRUE(st.act(c).ok());
  EXPECT_EQ(st.limiter().knobs()[2][0], 8);
}

}  // namespace
}  // namespace fw

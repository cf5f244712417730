#include "runtime/tick_schedule.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

TEST(TickScheduleTest, TicksInDuration) {
  EXPECT_EQ(TickSchedule::ticks_in(1.0, 0.1), 10);
  EXPECT_EQ(TickSchedule::ticks_in(60.0, 0.5), 120);
  EXPECT_EQ(TickSchedule::ticks_in(0.3, 0.1), 3);
  EXPECT_EQ(TickSchedule::ticks_in(0.05, 0.1), 0);
  EXPECT_EQ(TickSchedule::ticks_in(1.0, 0.0), 0);
}

TEST(TickScheduleTest, OnTimeTicksAreNeverMissed) {
  TickSchedule s(10.0, 0.1, 50);
  int n = 0;
  while (!s.done()) {
    EXPECT_EQ(s.deadline_s(), 10.0 + static_cast<double>(s.tick()) * 0.1);
    s.complete(s.deadline_s() + 0.003);  // sampling took 3 ms
    ++n;
  }
  EXPECT_EQ(n, 50);
  EXPECT_EQ(s.taken(), 50);
  EXPECT_EQ(s.missed(), 0);
}

// Always waking late by almost a whole interval must not push later deadlines back: tick k is
// still due at start + k*interval after a million ticks (an accumulating schedule would have
// drifted by 0.9 * 1e6 intervals).
TEST(TickScheduleTest, LatenessDoesNotAccumulate) {
  const double start = 1234.5, interval = 0.5;
  const int64_t n = 1'000'000;
  TickSchedule s(start, interval, n);
  while (!s.done()) s.complete(s.deadline_s() + 0.9 * interval);
  EXPECT_EQ(s.taken(), n);
  EXPECT_EQ(s.missed(), 0);
  EXPECT_EQ(s.deadline_of(n - 1), start + static_cast<double>(n - 1) * interval);
}

TEST(TickScheduleTest, CountsMissedTicksAndSkipsToNextFutureDeadline) {
  TickSchedule s(0.0, 0.1, 100);
  s.complete(0.01);  // tick 0 on time
  ASSERT_EQ(s.tick(), 1);
  s.complete(0.1 + 0.25);  // tick 1 took 0.25 s: deadlines 0.2 and 0.3 have passed
  EXPECT_EQ(s.missed(), 2);
  EXPECT_EQ(s.tick(), 4);
  EXPECT_DOUBLE_EQ(s.deadline_s(), 0.4);
  EXPECT_EQ(s.taken(), 2);
  // A 10.05 s stall at tick 4 passes deadlines 0.5 .. 10.4; the schedule ends at tick 99.
  s.complete(0.4 + 10.05);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.missed(), 2 + 95);  // ticks 5..99
  EXPECT_EQ(s.taken() + s.missed(), s.num_ticks());
}

TEST(TickScheduleTest, ADeadlineExactlyNowIsDueNotMissed) {
  TickSchedule s(0.0, 0.25, 10);
  s.complete(0.5);  // finished exactly at tick 2's deadline: tick 1 missed, tick 2 due
  EXPECT_EQ(s.missed(), 1);
  EXPECT_EQ(s.tick(), 2);
}

TEST(TickScheduleTest, StallOfManyIntervalsCountsEachMissedTick) {
  TickSchedule s(0.0, 0.5, 1000);
  s.complete(10.05);  // tick 0 took 10.05 s: deadlines 0.5 .. 10.0 (20 of them) passed
  EXPECT_EQ(s.missed(), 20);
  EXPECT_EQ(s.tick(), 21);
  EXPECT_DOUBLE_EQ(s.deadline_s(), 10.5);
}

TEST(TickScheduleTest, EmptyScheduleIsDone) {
  TickSchedule s(0.0, 1.0, 0);
  EXPECT_TRUE(s.done());
  EXPECT_EQ(s.taken(), 0);
}

}  // namespace
}  // namespace fw

// StartGate: the coordinator's staggered job starts (fleet/start_gate.hpp).

#include "fleet/start_gate.hpp"

#include <gtest/gtest.h>

namespace fw::fleet {
namespace {

// Three jobs announcing the same start: the site rises at most the ramp on average, one start
// after the other (each 8 kW at 1 kW/s: 8 s apart), in order of id.
TEST(StartGate, JobsAnnouncingOneStartAreSpacedByTheirRiseOverTheRamp) {
  StartGate g(1000);
  auto s = g.plan({{"b", 100, 8000}, {"a", 100, 8000}, {"c", 100, 4000}}, 50);
  EXPECT_DOUBLE_EQ(s.at("a"), 100);
  EXPECT_DOUBLE_EQ(s.at("b"), 108);
  EXPECT_DOUBLE_EQ(s.at("c"), 116);
  // A later announcement than the queue's end keeps its own time.
  s = g.plan({{"a", 100, 8000}, {"b", 108, 8000}, {"c", 116, 4000}, {"d", 200, 1000}}, 60);
  EXPECT_DOUBLE_EQ(s.at("b"), 108);  // kept: the job waits on its slot
  EXPECT_DOUBLE_EQ(s.at("d"), 200);
}

// A slot never moves under a job that waits on it, also once it has passed (the job is due);
// a job announcing later than its slot is queued again; one that stopped announcing (it
// started) is forgotten; a new job queues after the kept slots.
TEST(StartGate, SlotsAreKeptWhileTheJobWaitsOnThem) {
  StartGate g(500);
  auto s = g.plan({{"a", 10, 5000}, {"b", 10, 5000}}, 0);
  ASSERT_DOUBLE_EQ(s.at("b"), 20);
  s = g.plan({{"a", 11, 5000}, {"b", 20, 5000}, {"new", 5, 1000}}, 11);  // a is due: "now"
  EXPECT_DOUBLE_EQ(s.at("a"), 10);
  EXPECT_DOUBLE_EQ(s.at("b"), 20);
  EXPECT_DOUBLE_EQ(s.at("new"), 30);                     // after b has risen (20 + 5000 / 500)
  s = g.plan({{"b", 40, 5000}, {"new", 30, 1000}}, 12);  // a started; b now means to start later
  EXPECT_EQ(s.count("a"), 0u);
  EXPECT_DOUBLE_EQ(s.at("new"), 30);
  EXPECT_DOUBLE_EQ(s.at("b"), 40);
}

TEST(StartGate, NoRampNoGate) {
  StartGate g(0);
  auto s = g.plan({{"a", 100, 8000}, {"b", 100, 8000}}, 50);
  EXPECT_DOUBLE_EQ(s.at("a"), 100);
  EXPECT_DOUBLE_EQ(s.at("b"), 100);
}

}  // namespace
}  // namespace fw::fleet

#include "fleet/allocator.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "fleet/split_plan.hpp"

namespace fw::fleet {
namespace {

NodeRecord node(std::string name, int gpus, double min_w, double max_w, double draw_w) {
  NodeRecord r;
  r.node = std::move(name);
  r.gpus = gpus;
  r.min_w = min_w;
  r.nameplate_w = max_w;
  r.draw_w = draw_w;
  return r;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

TEST(Allocator, EqualSplitsPerGpuWithinBounds) {
  EqualAllocator a;
  auto w = a.split(3000, {node("a", 4, 400, 2800, 0), node("b", 8, 800, 5600, 0)});
  EXPECT_NEAR(w[0], 1000, 1e-3);
  EXPECT_NEAR(w[1], 2000, 1e-3);
  // Node a is capped at its nameplate; the rest goes to b.
  w = a.split(6000, {node("a", 4, 400, 1000, 0), node("b", 4, 400, 5600, 0)});
  EXPECT_NEAR(w[0], 1000, 1e-3);
  EXPECT_NEAR(w[1], 5000, 1e-3);
  // More budget than nameplates: everyone at nameplate, sum below the budget.
  w = a.split(1e6, {node("a", 4, 400, 1000, 0)});
  EXPECT_NEAR(w[0], 1000, 1e-9);
}

TEST(Allocator, BelowFloorsScalesFloorsAndNeverExceedsBudget) {
  EqualAllocator a;
  auto w = a.split(600, {node("a", 4, 400, 1000, 0), node("b", 4, 400, 1000, 0)});
  EXPECT_NEAR(w[0], 300, 1e-9);
  EXPECT_NEAR(sum(w), 600, 1e-9);
}

TEST(Allocator, ProportionalFollowsDemand) {
  ProportionalAllocator a;
  auto w = a.split(1500, {node("a", 4, 0, 2000, 1500), node("b", 4, 0, 2000, 500)});
  EXPECT_NEAR(w[0], 1125, 1e-3);
  EXPECT_NEAR(w[1], 375, 1e-3);
  EXPECT_LE(sum(w), 1500 + 1e-6);
}

TEST(Allocator, FactoryNamesChoices) {
  EXPECT_TRUE(make_allocator("equal").ok());
  EXPECT_TRUE(make_allocator("proportional").ok());
  auto bad = make_allocator("pfi-typo");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("equal or proportional"), std::string::npos);
}

TEST(SplitPlan, HoldsDepartedSharesUntilKnownOff) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.site_w = 3000;
  in.live = {{"a", node("a", 4, 0, 3000, 0)}};
  Assignment gone;
  gone.watts = 1000;
  gone.safe_w = 1200;  // it may sit at its safe share: the larger is reserved
  gone.revision = 5;
  in.assigned = {{"b", gone}};
  Plan p = plan_split(in, a);
  EXPECT_EQ(p.held, std::vector<std::string>{"b"});
  EXPECT_NEAR(p.held_w, 1200, 1e-9);
  EXPECT_NEAR(p.watts["a"], 1800, 1e-3);
  EXPECT_NEAR(p.safe_w["a"], 1800, 1e-9);
  in.off = {"b"};
  p = plan_split(in, a);
  EXPECT_TRUE(p.held.empty());
  EXPECT_EQ(p.freed, std::vector<std::string>{"b"});
  EXPECT_NEAR(p.watts["a"], 3000, 1e-3);
}

TEST(SplitPlan, GridTargetLowersTheSplitAndSafeSharesSumWithinIt) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.site_w = 4000;
  in.live = {{"a", node("a", 4, 0, 4000, 0)}, {"b", node("b", 12, 0, 4000, 0)}};
  GridTarget t;
  t.value_w = 2000;
  t.start_unix_s = 50;
  t.correlation_id = "x";
  in.grid = t;
  Plan p = plan_split(in, a);
  EXPECT_NEAR(p.effective_w, 2000, 1e-9);
  EXPECT_NEAR(p.watts["a"] + p.watts["b"], 2000, 1e-3);
  EXPECT_NEAR(p.safe_w["a"] + p.safe_w["b"], 2000, 1e-9);
  EXPECT_NEAR(p.safe_w["a"], 500, 1e-9);
}

}  // namespace
}  // namespace fw::fleet

namespace fw::fleet {
namespace {

TEST(SplitPlan, RaisesWaitForUnconfirmedDecreases) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.expiry_s = 10;
  in.site_w = 2000;
  NodeRecord x = node("x", 4, 0, 2000, 1000), y = node("y", 4, 0, 2000, 0);
  x.cap_w = 1000;
  x.time_unix_s = 95;  // older than x's last assignment (written at 99 = 109 - 10)
  Assignment ax;
  ax.watts = 2000;  // x had the whole site before y joined
  ax.revision = 1;
  ax.expires_unix_s = 109;
  in.live = {{"x", x}, {"y", y}};
  in.assigned = {{"x", ax}};
  Plan p = plan_split(in, a);
  EXPECT_NEAR(p.watts["x"], 1000, 1e-3);      // lowered at once
  EXPECT_NEAR(p.reserve_w["x"], 2000, 1e-9);  // but it may still draw 2000
  EXPECT_NEAR(p.watts["y"], 0, 1e-6);         // so y waits (at its floor, 0 here)
  x.time_unix_s = 101;                        // x reports after the write: confirmed at its new cap
  x.cap_w = 1000;
  in.live["x"] = x;
  in.assigned["x"].watts = 1000;
  in.assigned["x"].reserve_w = 2000;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["y"], 1000, 1e-3);
  EXPECT_NEAR(p.reserve_w["x"], 1000, 1e-9);
}

}  // namespace
}  // namespace fw::fleet

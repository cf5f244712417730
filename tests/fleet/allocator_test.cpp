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
  EXPECT_NE(bad.status().message().find("pfi or greedy"), std::string::npos);
  auto pfi = make_allocator("pfi");
  ASSERT_TRUE(pfi.ok());
  EXPECT_EQ((*pfi)->name(), "pfi");
  auto greedy = make_allocator("greedy");
  ASSERT_TRUE(greedy.ok());
  EXPECT_EQ((*greedy)->name(), "greedy");
  // curves-METHOD: every allocation method on the published curves (dr replay's --method).
  for (const char* m : {"curves-greedy", "curves-equal", "curves-pfi_scaled", "curves-optimal"}) {
    auto c = make_allocator(m);
    ASSERT_TRUE(c.ok()) << m;
    EXPECT_EQ((*c)->name(), m);
  }
  EXPECT_FALSE(make_allocator("curves-typo").ok());
}

NodeRecord with_job(NodeRecord n, double pfi, double elasticity = 0, double job_min_w = 0) {
  JobRecord j;
  j.id = n.node + "-job";
  j.gpus = n.gpus;
  j.draw_w = n.draw_w;
  j.pfi = pfi;
  j.elasticity = elasticity;
  j.min_w = job_min_w;
  n.jobs.push_back(j);
  return n;
}

TEST(Allocator, PfiCutsTheMoreElasticNodeMore) {
  auto a = make_allocator("pfi");
  ASSERT_TRUE(a.ok());
  // Same hardware, node b's job is three times as flexible: under a 1000 W cut b gives up 3/4.
  const std::vector<NodeRecord> nodes{with_job(node("a", 4, 400, 2000, 2000), 1.0),
                                      with_job(node("b", 4, 400, 2000, 2000), 3.0)};
  auto w = (*a)->split(3000, nodes);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(sum(w), 3000, 1e-3);
  EXPECT_NEAR(2000 - w[0], 250, 1e-3);
  EXPECT_NEAR(2000 - w[1], 750, 1e-3);
  // Elasticity stands in for a missing PFI (PFI = 1 / elasticity): the same split.
  auto e = (*a)->split(3000, {with_job(node("a", 4, 400, 2000, 2000), 0, 1.0),
                              with_job(node("b", 4, 400, 2000, 2000), 0, 1.0 / 3)});
  EXPECT_NEAR(e[0], w[0], 1e-3);
  EXPECT_NEAR(e[1], w[1], 1e-3);
  // The equal split ignores the jobs.
  auto eq = EqualAllocator().split(3000, nodes);
  EXPECT_NEAR(eq[0], eq[1], 1e-9);
}

TEST(Allocator, PfiRespectsFloorsAndNameplates) {
  auto a = make_allocator("pfi");
  ASSERT_TRUE(a.ok());
  // b is very elastic but its job needs 1500 W: b stops at that floor, a gives up the rest.
  const std::vector<NodeRecord> nodes{with_job(node("a", 4, 400, 2000, 2000), 1.0),
                                      with_job(node("b", 4, 400, 2000, 2000), 50.0, 0, 1500)};
  auto w = (*a)->split(2600, nodes);
  EXPECT_NEAR(w[1], 1500, 1e-3);
  EXPECT_NEAR(w[0], 1100, 1e-3);
  EXPECT_NEAR(sum(w), 2600, 1e-3);
  // Plenty of budget: every node at its nameplate.
  w = (*a)->split(1e6, nodes);
  EXPECT_NEAR(w[0], 2000, 1e-6);
  EXPECT_NEAR(w[1], 2000, 1e-6);
  // Budget below the jobs' floors (1900 W) but above the nodes' (800 W): the equal split,
  // still within every node's [min_w, nameplate_w] and the budget.
  w = (*a)->split(1000, nodes);
  EXPECT_NEAR(sum(w), 1000, 1e-3);
  EXPECT_GE(w[0], 400 - 1e-9);
  EXPECT_GE(w[1], 400 - 1e-9);
  // Below the nodes' floors: the same fraction of each floor.
  w = (*a)->split(600, nodes);
  EXPECT_NEAR(w[0], 300, 1e-9);
  EXPECT_NEAR(w[1], 300, 1e-9);
}

TEST(Allocator, PfiCountsGpusNoJobReports) {
  auto a = make_allocator("pfi");
  ASSERT_TRUE(a.ok());
  // Node a runs a 2-GPU job of PFI 4 on 4 GPUs (2 idle GPUs at PFI 1); node b has no jobs.
  NodeRecord na = node("a", 4, 0, 2000, 1000);
  JobRecord j;
  j.id = "j";
  j.gpus = 2;
  j.pfi = 4.0;
  na.jobs.push_back(j);
  auto w = (*a)->split(3000, {na, node("b", 4, 0, 2000, 0)});
  EXPECT_NEAR(sum(w), 3000, 1e-3);
  EXPECT_LT(w[0], w[1]);  // a holds the most flexible watts
  EXPECT_LE(w[1], 2000 + 1e-9);
}

TEST(Allocator, GreedyCutsTheMostElasticJobFirst) {
  auto a = make_allocator("greedy");
  ASSERT_TRUE(a.ok());
  const std::vector<NodeRecord> nodes{with_job(node("a", 4, 400, 2000, 2000), 1.0),
                                      with_job(node("b", 4, 400, 2000, 2000), 3.0)};
  // A 1000 W cut fits within b's range above its floor: a keeps its nameplate.
  auto w = (*a)->split(3000, nodes);
  EXPECT_NEAR(w[0], 2000, 1e-3);
  EXPECT_NEAR(w[1], 1000, 1e-3);
  // A deeper cut takes b to its floor, then a.
  w = (*a)->split(2000, nodes);
  EXPECT_NEAR(w[1], 400, 1e-3);
  EXPECT_NEAR(w[0], 1600, 1e-3);
}

TEST(Allocator, PfiUsesTheReportedUncontrolledDrawAsPmax) {
  auto a = make_allocator("pfi");
  ASSERT_TRUE(a.ok());
  // Both nameplates 2000 W, but a would draw only 1200 W uncontrolled: a 2800 W budget cuts
  // both from what they would draw, a (the smaller P_max, same PFI) less: the "pfi" rule
  // weights the curtailment by P_max^2 / T_max x PFI (src/allocation), T_max = GPUs.
  NodeRecord na = with_job(node("a", 4, 400, 2000, 1200), 1.0);
  na.uncontrolled_w = 1200;
  NodeRecord nb = with_job(node("b", 4, 400, 2000, 2000), 1.0);
  nb.uncontrolled_w = 2000;
  auto w = (*a)->split(2800, {na, nb});
  EXPECT_NEAR(sum(w), 2800, 1e-3);
  EXPECT_LT(w[0], 1200);
  EXPECT_NEAR((1200 - w[0]) / (2000 - w[1]), 1200.0 * 1200 / (2000.0 * 2000), 1e-6);
  // Without the prediction a's P_max is its nameplate: it gets more than it would draw.
  na.uncontrolled_w = 0;
  auto n = (*a)->split(2800, {na, nb});
  EXPECT_NEAR(n[0], 1400, 1e-3);
}

TEST(Allocator, SetJobPfiIsTheAgentsHook) {
  NodeRecord r = node("a", 8, 800, 4000, 3000);
  r = with_job(r, 0);
  r.jobs[0].gpus = 4;
  r.jobs.push_back(r.jobs[0]);
  r.jobs[1].id = "other";
  EXPECT_EQ(set_job_pfi(r, {{"a-job", 2.5}, {"other", -1}, {"absent", 3}}), 1);
  EXPECT_DOUBLE_EQ(r.jobs[0].pfi, 2.5);
  EXPECT_DOUBLE_EQ(r.jobs[1].pfi, 0);  // a non-positive value is not a PFI: left unknown
  // The published PFI reaches the registration and the pfi allocator.
  auto back = decode_node(encode(r), "k");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_DOUBLE_EQ(back->jobs[0].pfi, 2.5);
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

// Within expiry_s of the leader's win (settle_until_unix_s) a node without an assignment key
// gets at most its published safe share (its floor when it published none); a node with one is
// split as usual, and after the window everyone is.
TEST(SplitPlan, UnassignedNodesGetAtMostTheirSafeShareWhileTheLeaderSettles) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.site_w = 3000;
  NodeRecord na = node("a", 4, 100, 1500, 0);
  na.safe_w = 900;
  NodeRecord nb = node("b", 4, 100, 1500, 0);  // no safe share published
  NodeRecord nc = node("c", 4, 100, 1500, 0);
  nc.safe_w = 900;
  in.live = {{"a", na}, {"b", nb}, {"c", nc}};
  Assignment had;
  had.watts = 1000;
  had.revision = 7;
  had.expires_unix_s = 104;
  in.assigned = {{"c", had}};
  in.expiry_s = 4;
  in.settle_until_unix_s = 103;
  in.leader_rev = 9;
  Plan p = plan_split(in, a);
  EXPECT_NEAR(p.watts["a"], 900, 1e-6);
  EXPECT_NEAR(p.watts["b"], 100, 1e-6);
  EXPECT_NEAR(p.watts["c"], 1000, 1e-6);
  // A's key written by this leader in the window: still capped.
  Assignment ours;
  ours.watts = 900;
  ours.revision = 9;
  ours.expires_unix_s = 104;
  in.assigned["a"] = ours;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["a"], 900, 1e-6);
  in.assigned.erase("a");
  in.now_unix_s = 103;  // the window is over
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["a"], 1000, 1e-6);
  EXPECT_NEAR(p.watts["b"], 1000, 1e-6);
}

// joiner_reserve_w is left unassigned (raises included) unless the live floors need it.
TEST(SplitPlan, RoomIsLeftForOneJoinerFloor) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.site_w = 3000;
  in.live = {{"a", node("a", 4, 100, 1500, 0)}, {"b", node("b", 4, 100, 1500, 0)}};
  in.joiner_reserve_w = 100;
  Plan p = plan_split(in, a);
  EXPECT_NEAR(p.joiner_w, 100, 1e-9);
  EXPECT_NEAR(p.watts["a"] + p.watts["b"] + 100, 3000, 1e-6);
  in.site_w = 250;  // the floors (200 W) come first: 50 W left for the joiner
  p = plan_split(in, a);
  EXPECT_NEAR(p.joiner_w, 50, 1e-9);
  EXPECT_NEAR(p.watts["a"] + p.watts["b"], 200, 1e-6);
  // Two pending joiners (join markers): their floors too; a marker of a live node is moot.
  in.site_w = 3000;
  in.pending = {{"c", 150}, {"d", 100}, {"a", 100}};
  p = plan_split(in, a);
  EXPECT_NEAR(p.joiner_w, 100 + 150 + 100, 1e-9);
  EXPECT_NEAR(p.watts["a"] + p.watts["b"] + 350, 3000, 1e-6);
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

// After a cut, nodes whose caps are within their shares (the agents' share guard) and that
// confirmed the cut get the whole raise in one round; a node that reports caps above its
// share (a controller that lifted them) holds back what its caps could draw.
TEST(SplitPlan, RaisesAfterACutReachNodesWhoseCapsStayWithinTheirShares) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.expiry_s = 10;
  in.site_w = 1000;
  for (const char* n : {"a", "b", "c", "d"}) {
    NodeRecord r = node(n, 1, 100, 400, 140);
    r.cap_w = 150;       // within the 150 W cut share
    r.time_unix_s = 99;  // confirmed after the last write
    in.live[n] = r;
    Assignment cut;
    cut.watts = 150;
    cut.reserve_w = 150;
    cut.revision = 3;
    cut.expires_unix_s = 98 + 10;  // written at 98
    in.assigned[n] = cut;
  }
  Plan p = plan_split(in, a);
  for (const char* n : {"a", "b", "c", "d"}) EXPECT_NEAR(p.watts[n], 250, 1e-6) << n;
  in.live["d"].cap_w = 400;  // caps lifted above the share: 400 W could be drawn
  p = plan_split(in, a);
  double sum_w = 0;
  for (const char* n : {"a", "b", "c", "d"}) sum_w += std::max(p.watts[n], p.reserve_w[n]);
  EXPECT_LE(sum_w, 1000 + 1e-6);
  EXPECT_LT(p.watts["a"], 250 - 1);
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

namespace fw::fleet {
namespace {

// Under `equal`, a node drawing well under its share keeps its draw + 10 % of its nameplate
// and the rest goes to a node held at its share; when the idle node's draw comes back near
// what it keeps, its share comes back at the next round.
TEST(SplitPlan, IdleHeadroomGoesToANodeHeldAtItsShare) {
  EqualAllocator a;
  PlanInput in;
  in.now_unix_s = 100;
  in.expiry_s = 10;
  in.site_w = 1000;
  NodeRecord busy = node("busy", 1, 100, 1000, 495), idle = node("idle", 1, 100, 800, 60);
  busy.time_unix_s = idle.time_unix_s = 99;  // both confirmed the last write (at 98)
  busy.cap_w = idle.cap_w = 500;
  in.live = {{"busy", busy}, {"idle", idle}};
  for (const char* n : {"busy", "idle"}) {
    Assignment was;
    was.watts = was.reserve_w = 500;
    was.revision = 3;
    was.expires_unix_s = 108;
    in.assigned[n] = was;
  }
  Plan p = plan_split(in, a);
  EXPECT_NEAR(p.watts["idle"], 60 + 80, 1e-6);  // draw + 10 % of 800 W
  // The idle node's reserve is its confirmed caps (500 W) until it reports the lowered share.
  EXPECT_NEAR(p.watts["busy"], 500, 1e-6);
  in.live["idle"].cap_w = 140;  // it applied 140 W
  in.assigned["idle"].watts = in.assigned["idle"].reserve_w = 140;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["busy"], 1000 - 140, 1e-6);
  EXPECT_NEAR(p.watts["busy"] + p.watts["idle"], 1000, 1e-6);
  // The idle node's draw back within 5 % of its nameplate of what it keeps: busy too, the
  // equal split again (the busy node lowered first, the idle one raised once it confirmed).
  in.live["busy"].cap_w = 860;
  in.assigned["busy"].watts = in.assigned["busy"].reserve_w = 860;
  in.live["busy"].draw_w = 850;
  in.live["idle"].draw_w = 130;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["busy"], 500, 1e-6);
  EXPECT_NEAR(p.watts["idle"], 140, 1e-6);
  in.live["busy"].cap_w = 500;
  in.assigned["busy"].watts = 500;
  in.assigned["busy"].reserve_w = 860;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["idle"], 500, 1e-6);
  // Nobody held at its share (both well under): nothing moves.
  in.live["busy"].draw_w = 200;
  in.live["idle"].draw_w = 60;
  in.assigned["idle"].watts = 500;
  p = plan_split(in, a);
  EXPECT_NEAR(p.watts["busy"], 500, 1e-6);
  EXPECT_NEAR(p.watts["idle"], 500, 1e-6);
}

}  // namespace

// A node of job `id` with a concave throughput curve t(b) = 1 - k (1 - b / nameplate)^2 at five
// budgets from its floor to its nameplate (the jobs' published sweeps).
NodeRecord curve_node(std::string name, std::string id, double k, double tier, bool pausable) {
  NodeRecord r = node(std::move(name), 8, 800, 3200, 2000);
  JobRecord j;
  j.id = std::move(id);
  j.gpus = 8;
  j.tier_min = tier;
  j.pausable = pausable;
  r.jobs.push_back(j);
  for (int p = 0; p < 5; ++p) {
    const double b = 800 + 600.0 * p;
    const double x = 1 - b / 3200;
    r.throughput_curve.emplace_back(b, 1 - k * x * x);
    r.draw_curve.emplace_back(b, 0.9 * b);
  }
  return r;
}

// The site of the tests below: two nodes of a steep job (tier 0.9), two of a flat one (0.75),
// two of a pausable pretraining job (0.5).
std::vector<NodeRecord> curve_site() {
  return {curve_node("a0", "steep", 1.6, 0.9, false), curve_node("a1", "steep", 1.6, 0.9, false),
          curve_node("b0", "flat", 0.4, 0.75, false), curve_node("b1", "flat", 0.4, 0.75, false),
          curve_node("c0", "pt", 0.9, 0.5, true),     curve_node("c1", "pt", 0.9, 0.5, true)};
}

TEST(Allocator, CurvesSplitIsTheReplaysAllocationOnTheJobsCurves) {
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok()) << made.status().message();
  const std::vector<NodeRecord> nodes = curve_site();
  const double budget = 0.75 * 6 * 3200;
  const std::vector<double> w = (*made)->split(budget, nodes);
  ASSERT_EQ(w.size(), nodes.size());
  EXPECT_LE(sum(w), budget + 1e-6);
  EXPECT_GE(sum(w), budget - 1);
  // The same request through src/allocation (the code `dr replay` splits with): per job the
  // curve at 2 nodes' budgets, throughput weighted by tier / sum of tiers, max_slowdown 1 - tier.
  const std::vector<CurveJob> jobs = curve_jobs(nodes);
  ASSERT_EQ(jobs.size(), 3u);
  std::vector<allocation::Job> req;
  for (const auto& j : jobs) req.push_back(j.job);
  const auto a = allocation::allocate(req, budget, allocation::Method::kOptimal);
  ASSERT_TRUE(a.feasible);
  for (size_t k = 0; k < jobs.size(); ++k) {
    for (size_t i : jobs[k].nodes) EXPECT_NEAR(w[i], a.power_w[k] / 2, 1e-6) << nodes[i].node;
  }
  EXPECT_NEAR(jobs[0].job.curve.back().throughput, 0.9 / 2.15, 1e-9);  // weight tier / sum
  // Not the equal split: the steep job keeps more, the flat one gives more.
  EXPECT_GT(w[0], w[2] + 100);
  // Every job at or above its tier on its own curve.
  for (const auto& j : jobs) {
    const size_t i = j.nodes.front();
    const double t = curve_draw_w(nodes[i].throughput_curve, w[i]);
    EXPECT_GE(t, j.tier_min - 1e-9) << j.id;
  }
  auto g = make_allocator("curves-greedy");
  ASSERT_TRUE(g.ok());
  const std::vector<double> wg = (*g)->split(budget, nodes);
  for (size_t i = 0; i < nodes.size(); ++i) EXPECT_NEAR(wg[i], w[i], 1e-3);  // concave: same
}

TEST(Allocator, CurvesDropTheTiersWhenTheyDoNotFitAndStayWithinTheBudget) {
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok());
  const std::vector<NodeRecord> nodes = curve_site();
  const std::vector<CurveJob> jobs = curve_jobs(nodes);
  double tiers_w = 0;
  for (const auto& j : jobs) tiers_w += j.tier_floor_w;
  const double budget = tiers_w - 500;  // above the nodes' floors (4800 W), below the tiers
  ASSERT_GT(budget, 6 * 800);
  const std::vector<double> w = (*made)->split(budget, nodes);
  EXPECT_LE(sum(w), budget + 1e-6);
  for (size_t i = 0; i < nodes.size(); ++i) EXPECT_GE(w[i], nodes[i].min_w - 1e-9);
}

// A one-GPU node of job `id` (tier 0.3) publishing `curve` as its throughput curve.
NodeRecord bumpy_node(std::string name, std::vector<std::pair<double, double>> curve) {
  NodeRecord r = node(name, 1, curve.front().first, curve.back().first, curve.back().first);
  JobRecord j;
  j.id = std::move(name);
  j.gpus = 1;
  j.tier_min = 0.3;
  r.jobs.push_back(j);
  r.throughput_curve = std::move(curve);
  return r;
}

// The published sweeps are noisy: a point measured high (a bump) must not draw budget to it.
// Job b's raw curve is 0.5, 0.6, 0.95, 0.96 at 100..400 W (its concave envelope: 0.5, 0.725,
// 0.95, 0.96, 0.225 per 100 W up to 300 W); job a's is linear, 0.3 per 100 W up to 300 W. On
// the envelopes a takes its nameplate first and b the rest (a 300 W, b 250 W of 550 W); on the
// raw points the optimum lands b on its bump (a 250, b 300: 0.85 + 0.95 > 1.0 + 0.775).
TEST(Allocator, CurvesSplitOnTheUpperConcaveEnvelopeNotOnABumpOfTheRawSweep) {
  const std::vector<NodeRecord> nodes = {
      bumpy_node("a", {{100, 0.4}, {200, 0.7}, {300, 1.0}}),
      bumpy_node("b", {{100, 0.5}, {200, 0.6}, {300, 0.95}, {400, 0.96}})};
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok());
  const std::vector<double> w = (*made)->split(550, nodes);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(w[0], 300, 1e-3);
  EXPECT_NEAR(w[1], 250, 1e-3);
  // The jobs' curves are the envelopes: concave and monotone in budget (weights 1/2 each).
  const std::vector<CurveJob> jobs = curve_jobs(nodes);
  ASSERT_EQ(jobs.size(), 2u);
  ASSERT_EQ(jobs[1].job.curve.size(), 4u);
  EXPECT_NEAR(jobs[1].job.curve[1].throughput, 0.5 * 0.725, 1e-9);
  EXPECT_NEAR(jobs[1].job.curve[2].throughput, 0.5 * 0.95, 1e-9);
  // A last point measured below the one before (noise at the nameplate) is lifted to it.
  const auto env = upper_concave_envelope({{100, 0.5}, {200, 0.9}, {300, 1.0}, {400, 0.97}});
  ASSERT_EQ(env.size(), 4u);
  EXPECT_DOUBLE_EQ(env[3].second, 1.0);
  EXPECT_DOUBLE_EQ(env[0].second, 0.5);
  EXPECT_DOUBLE_EQ(env[1].second, 0.9);
}

PlanInput pause_input(double target_w, bool binding) {
  PlanInput in;
  in.now_unix_s = 1000;
  in.site_w = 6 * 3200;
  in.grid.events.push_back({});
  in.grid.events.back().value_w = target_w;
  in.grid.events.back().start_unix_s = 0;
  in.grid.events.back().end_unix_s = binding ? 1e9 : 1;
  for (const auto& r : curve_site()) in.live[r.node] = r;
  in.pause_stagger_s = 30;
  in.binding = binding;
  return in;
}

TEST(SplitPlan, PausesAPausableJobOnlyWhenTheTiersCannotReachTheTargetStaggered) {
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok());
  const std::vector<CurveJob> jobs = curve_jobs(curve_site());
  double tiers_w = 0;
  for (const auto& j : jobs) tiers_w += j.tier_floor_w;
  // A target the tiers fit: nobody pauses.
  Plan p = plan_split(pause_input(tiers_w + 200, true), **made);
  EXPECT_TRUE(p.paused_jobs.empty());
  EXPECT_FALSE(p.pause_changed);
  // Below the tiers' floors: the pausable job pauses, its nodes at their floors, the rest split.
  const double deep = tiers_w - 1500;
  p = plan_split(pause_input(deep, true), **made);
  ASSERT_EQ(p.paused_jobs, std::set<std::string>{"pt"});
  EXPECT_TRUE(p.pause_changed);
  EXPECT_EQ(p.paused_nodes, (std::set<std::string>{"c0", "c1"}));
  EXPECT_NEAR(p.watts.at("c0"), 800, 1e-9);
  double total = 0;
  for (const auto& [n, w] : p.watts) total += w;
  EXPECT_LE(total, deep + 1e-6);
  EXPECT_GT(p.watts.at("a0"), p.watts.at("b0"));  // the steep job keeps more
  // The pause is carried by the assignments; within the stagger nothing changes, even when
  // the target is back up.
  PlanInput in = pause_input(6 * 3200, true);
  for (const auto& [n, w] : p.watts) {
    Assignment a;
    a.watts = w;
    a.pause = p.paused_nodes.count(n) > 0;
    in.assigned[n] = a;
  }
  in.last_pause_change_unix_s = in.now_unix_s - 10;
  Plan q = plan_split(in, **made);
  EXPECT_EQ(q.paused_jobs, std::set<std::string>{"pt"});
  EXPECT_FALSE(q.pause_changed);
  // After the stagger it resumes (its tier floor fits again).
  in.last_pause_change_unix_s = in.now_unix_s - 31;
  q = plan_split(in, **made);
  EXPECT_TRUE(q.paused_jobs.empty());
  EXPECT_TRUE(q.pause_changed);
  // No event binding: a paused job resumes.
  PlanInput off = pause_input(6 * 3200, false);
  off.assigned = in.assigned;
  q = plan_split(off, **made);
  EXPECT_TRUE(q.paused_jobs.empty());
  // Pausing judges the feed-forward split when given (the curves reach the target above the
  // tiers there; the split itself swings with the integral): no pause.
  in = pause_input(deep, true);
  in.pause_split_w = tiers_w + 500;
  EXPECT_TRUE(plan_split(in, **made).paused_jobs.empty());
  in.pause_split_w = deep;
  EXPECT_EQ(plan_split(in, **made).paused_jobs, std::set<std::string>{"pt"});
  // Without pausing (stagger 0) nothing pauses however deep.
  in = pause_input(deep, true);
  in.pause_stagger_s = 0;
  EXPECT_TRUE(plan_split(in, **made).paused_jobs.empty());
}

}  // namespace fw::fleet

namespace fw::fleet {

// A job is paused at most (1 - tier_min) of the event's span (its whole-run tier: the uncut
// spans count at 1 and the rest of the event it runs at or above its tier floor): when the
// paused job's budget is spent, the next pausable job pauses first (the site stays within the
// target), and one stagger later the first resumes.
TEST(SplitPlan, APausedJobResumesWithinItsTierAndTheNextPausableJobTakesItsTurnStaggered) {
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok());
  const std::vector<NodeRecord> site = {
      curve_node("a0", "steep", 1.6, 0.9, false), curve_node("a1", "steep", 1.6, 0.9, false),
      curve_node("p0", "pt1", 1.6, 0.5, true),    curve_node("p1", "pt1", 1.6, 0.5, true),
      curve_node("q0", "pt2", 1.4, 0.5, true),    curve_node("q1", "pt2", 1.4, 0.5, true)};
  const std::vector<CurveJob> jobs = curve_jobs(site);
  double tiers_w = 0;
  for (const auto& j : jobs) {
    tiers_w += j.tier_floor_w;
    if (j.pausable) {
      ASSERT_GT(j.tier_floor_w - j.floor_w, 900) << j.id;  // pausing frees it
    }
  }
  PlanInput in;
  in.now_unix_s = 1000;
  in.site_w = 6 * 3200;
  in.grid.events.push_back({});
  const double target_w = tiers_w - 900;  // one pausable job paused is enough
  in.grid.events.back().value_w = target_w;
  in.grid.events.back().start_unix_s = 0;
  in.grid.events.back().end_unix_s = 1e9;
  for (const auto& r : site) in.live[r.node] = r;
  in.pause_stagger_s = 10;
  in.binding = true;
  in.event_span_s = 600;  // a pause budget of 300 s per job of tier 0.5
  auto apply = [&](const Plan& p) {
    in.assigned.clear();
    for (const auto& [n, w] : p.watts) {
      Assignment a;
      a.watts = w;
      a.pause = p.paused_nodes.count(n) > 0;
      in.assigned[n] = a;
    }
    if (p.pause_changed) in.last_pause_change_unix_s = in.now_unix_s;
  };
  Plan p = plan_split(in, **made);
  ASSERT_EQ(p.paused_jobs.size(), 1u);
  const std::string first = *p.paused_jobs.begin();
  const std::string second = first == "pt1" ? "pt2" : "pt1";
  apply(p);
  // Within its budget it stays paused.
  in.now_unix_s += 100;
  in.paused_s[first] = 100;
  p = plan_split(in, **made);
  EXPECT_EQ(p.paused_jobs, std::set<std::string>{first});
  EXPECT_FALSE(p.pause_changed);
  apply(p);
  // Its budget spent: the other pauses first (both paused for one stagger) ...
  in.now_unix_s += 200;
  in.paused_s[first] = 300;
  p = plan_split(in, **made);
  EXPECT_EQ(p.paused_jobs, (std::set<std::string>{first, second}));
  EXPECT_TRUE(p.pause_changed);
  apply(p);
  // ... nothing within the stagger ...
  in.now_unix_s += 5;
  p = plan_split(in, **made);
  EXPECT_EQ(p.paused_jobs, (std::set<std::string>{first, second}));
  apply(p);
  // ... then the first resumes.
  in.now_unix_s += 6;
  in.paused_s[second] = 11;
  p = plan_split(in, **made);
  EXPECT_EQ(p.paused_jobs, std::set<std::string>{second});
  EXPECT_TRUE(p.pause_changed);
  double total = 0;
  for (const auto& [n, w] : p.watts) total += w;
  EXPECT_LE(total, target_w + 1e-6);
  apply(p);
  // The first does not pause again (its budget is spent) when the second's runs out: the
  // second resumes and the tiers give way (the allocator drops them).
  in.now_unix_s += 300;
  in.paused_s[second] = 300;
  p = plan_split(in, **made);
  EXPECT_TRUE(p.paused_jobs.empty());
  EXPECT_TRUE(p.pause_changed);
  // Without a span (event_span_s 0) a paused job stays paused through the event.
  in.event_span_s = 0;
  in.assigned.clear();
  in.paused_s.clear();
  in.last_pause_change_unix_s = -1e300;
  p = plan_split(in, **made);
  apply(p);
  in.now_unix_s += 1000;
  in.paused_s[first] = 1000;
  EXPECT_EQ(plan_split(in, **made).paused_jobs, std::set<std::string>{first});
}

}  // namespace fw::fleet

namespace fw::fleet {

// A paused job's nodes draw idle, under the floors they are assigned: the loop's feed-forward
// split (pause_split_w) is then higher by what they leave, which goes away when the job runs
// again. Judged without it, the job resumed, the split fell and it paused again (fleet-sim, 12
// nodes at -35 %: pt_mpt_7b_fast paused and resumed 3 times in 60 s). A paused job resumes only
// when its tier floor fits with what its nodes leave under their floors counted against it.
TEST(SplitPlan, APausedJobDoesNotResumeOnTheWattsItsOwnIdleNodesLeave) {
  auto made = make_allocator("curves");
  ASSERT_TRUE(made.ok());
  const std::vector<CurveJob> jobs = curve_jobs(curve_site());
  double tiers_w = 0, pt_gap_w = 0;
  for (const auto& j : jobs) {
    tiers_w += j.tier_floor_w;
    if (j.id == "pt") pt_gap_w = j.tier_floor_w - j.floor_w;
  }
  // pt paused, its two nodes drawing 300 W each (idle) on their 800 W floors.
  PlanInput in = pause_input(6 * 3200, true);
  for (const auto& r : curve_site()) {
    Assignment a;
    a.watts = r.min_w;
    a.pause = r.jobs.front().id == "pt";
    in.assigned[r.node] = a;
  }
  in.live["c0"].draw_w = in.live["c1"].draw_w = 300;
  in.grid.events.back().value_w = tiers_w - pt_gap_w;  // the others' tiers plus pt's floors
  // The feed-forward split is 900 W above what pt needs at its tier floor, less than the 2 x 500 W
  // its idle nodes leave under their floors.
  in.pause_split_w = tiers_w - pt_gap_w + 900 + 1.1 * pt_gap_w;
  Plan p = plan_split(in, **made);
  EXPECT_EQ(p.paused_jobs, std::set<std::string>{"pt"});
  EXPECT_FALSE(p.pause_changed);
  // With room for its tier floor and its nodes' running draw, it resumes.
  in.pause_split_w += 1000;
  p = plan_split(in, **made);
  EXPECT_TRUE(p.paused_jobs.empty());
}

}  // namespace fw::fleet

// The coordinator and node links against a real etcd (tests/fleet/etcd_harness.hpp): leader
// crash and takeover, a killed etcd member, all of etcd stopped, a node that loses its lease,
// a deposed coordinator. Without etcd it skips, or fails under CI=true (require_tool.hpp);
// every wait has a deadline.

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "../constant_plan.hpp"  // constant_plan
#include "../require_tool.hpp"   // FW_REQUIRE_TOOL
#include "etcd_harness.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/grid_server.hpp"
#include "fleet/node_link.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {
namespace {

using Clock = std::chrono::steady_clock;
using testing::EtcdCluster;
using testing::eventually;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

EtcdClientOptions etcd_options(const EtcdCluster& c) { return testing::fast_client_options(c); }

CoordinatorOptions coord_options(const std::string& site, const std::string& id, double budget) {
  CoordinatorOptions o;
  o.site = site;
  o.id = id;
  o.lease_ttl_s = 2;
  o.campaign_timeout_s = 0.5;
  o.expiry_s = 4;
  o.refresh_s = 1;
  o.default_budget_w = budget;
  o.tick_s = 0.05;
  return o;
}

NodeRecord record(const std::string& node) {
  NodeRecord r;
  r.node = node;
  r.gpus = 4;
  r.nameplate_w = 1500;
  r.min_w = 100;
  r.draw_w = 800;
  r.cap_w = 800;  // caps applied now (below any share the tests assign)
  return r;
}

std::unique_ptr<NodeLink> link(const EtcdCluster& c, const std::string& site,
                               const std::string& node, double safe_w) {
  NodeLinkOptions o;
  o.site = site;
  o.node = node;
  o.safe_share_w = safe_w;
  o.lease_ttl_s = 2;
  auto l = NodeLink::Start(etcd_options(c), o, record(node));
  if (!l.ok()) std::abort();
  return std::move(l).value();
}

bool all_assigned(const std::vector<std::unique_ptr<NodeLink>>& links, int64_t min_rev = 0) {
  for (const auto& l : links) {
    const NodeBudget b = l->budget();
    if (b.source != NodeBudget::Source::kAssignment || b.revision < min_rev) return false;
  }
  return true;
}

// Plays the agents: every 50 ms each link's budget is applied as its caps and reported back
// (update); max_w() is the largest sum of budgets seen.
class BudgetSampler {
 public:
  explicit BudgetSampler(const std::vector<std::unique_ptr<NodeLink>>* links) : links_(links) {
    thread_ = std::thread([this] {
      while (!stop_) {
        double sum = 0;
        const double now =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        for (const auto& l : *links_) {
          const double w = l->budget().watts;
          sum += w;
          NodeRecord r = record(l->options().node);  // the agent applies and reports it
          r.cap_w = w;
          r.time_unix_s = now;
          l->update(r);
        }
        double seen = max_.load();
        while (sum > seen && !max_.compare_exchange_weak(seen, sum)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  ~BudgetSampler() {
    stop_ = true;
    thread_.join();
  }
  double max_w() const { return max_.load(); }

 private:
  const std::vector<std::unique_ptr<NodeLink>>* links_;
  std::atomic<bool> stop_{false};
  std::atomic<double> max_{0};
  std::thread thread_;
};

class CoordinatorLive : public ::testing::Test {
 protected:
  void start(int members) {
    FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
    auto c = EtcdCluster::Start(members);
    ASSERT_TRUE(c.ok()) << c.status().message();
    cluster_ = std::move(c).value();
  }
  std::unique_ptr<EtcdCluster> cluster_;
};

TEST_F(CoordinatorLive, LeaderCrashOtherTakesOverWithinTtlAndBudgetHolds) {
  start(3);
  if (!cluster_) return;
  const double budget = 3000;
  auto a = Coordinator::Start(etcd_options(*cluster_), coord_options("s1", "a", budget));
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(eventually(5, [&] { return (*a)->leader(); }));
  auto b = Coordinator::Start(etcd_options(*cluster_), coord_options("s1", "b", budget));
  ASSERT_TRUE(b.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 3; ++i) links.push_back(link(*cluster_, "s1", "n" + std::to_string(i), 1000));
  BudgetSampler sampler(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  EXPECT_FALSE((*b)->leader());

  const auto t0 = Clock::now();
  (*a)->stop(/*resign=*/false);  // a crash: the leadership lease runs out
  ASSERT_TRUE(eventually(4, [&] { return (*b)->leader(); }));
  const double takeover_s = seconds_since(t0);
  EXPECT_LE(takeover_s, 2.0 + 1.0) << "takeover after " << takeover_s << " s";
  const int64_t rev_b = (*b)->stats().leader_rev;
  EXPECT_TRUE(eventually(3, [&] { return all_assigned(links, rev_b); }));
  EXPECT_LE(sampler.max_w(), budget + 1e-6);  // instantaneous, so also every 30 s window
}

TEST_F(CoordinatorLive, KilledEtcdMemberServiceContinues) {
  start(3);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s2", "a", 3000));
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i) links.push_back(link(*cluster_, "s2", "n" + std::to_string(i), 1000));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  cluster_->kill_member(0);  // possibly the raft leader: a new one is elected in ~1-2 s
  EtcdClientOptions patient = etcd_options(*cluster_);
  patient.call_timeout_s = 8;
  patient.max_attempts = 20;
  auto etcd = EtcdClient::Create(patient);
  ASSERT_TRUE(etcd.ok());
  SiteBudget sb;
  sb.watts = 1000;
  sb.source = "operator";
  const Status put = write_budget(*etcd, "s2", sb);
  ASSERT_TRUE(put.ok()) << put.message();
  EXPECT_TRUE(eventually(6, [&] {
    return all_assigned(links) &&
           links[0]->budget().watts + links[1]->budget().watts <= 1000 + 1e-6;
  }));
  EXPECT_NEAR(links[0]->budget().watts, (1000 - 100) / 2.0, 1e-3);  // a joiner's floor left free
}

TEST_F(CoordinatorLive, AllEtcdStoppedLinksFallBackToSafeSharesWithinExpiry) {
  start(1);
  if (!cluster_) return;
  const double budget = 3000;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s3", "a", budget));
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  // Configured safe shares above the site's even split: the published one must win.
  for (int i = 0; i < 3; ++i) links.push_back(link(*cluster_, "s3", "n" + std::to_string(i), 1400));
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  BudgetSampler sampler(&links);  // from the first assignments on (a deliberately high
                                  // configured share is used before them)
  double latest_expiry = 0;
  for (const auto& l : links) latest_expiry = std::max(latest_expiry, l->budget().expires_unix_s);
  cluster_->kill_member(0);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Every link is on its safe share by the latest expiry (+ 0.2 s of polling slack).
  ASSERT_TRUE(eventually(latest_expiry - now + 0.2, [&] {
    for (const auto& l : links)
      if (l->budget().source != NodeBudget::Source::kSafeShare) return false;
    return true;
  }));
  for (const auto& l : links) EXPECT_NEAR(l->budget().watts, 1000, 1e-6);
  EXPECT_LE(sampler.max_w(), budget + 1e-6);
}

TEST_F(CoordinatorLive, NodeThatLostItsLeaseIsHeldBackUntilKnownOff) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s4", "a", 2000));
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s4", "alive", 1000));
  links.push_back(link(*cluster_, "s4", "dead", 1000));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  // A joiner's floor (100 W) stays free: (2000 - 100) / 2 each.
  EXPECT_TRUE(eventually(2, [&] { return std::abs(links[0]->budget().watts - 950) < 1e-3; }))
      << links[0]->budget().watts;
  links[1]->crash();  // its lease runs out; its GPUs may sit at their last caps
  ASSERT_TRUE(eventually(5, [&] { return (*c)->stats().last_plan.held.size() == 1; }));
  EXPECT_NEAR((*c)->stats().last_plan.held_w, 1000, 1e-3);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // refreshes happen
  // 2000 - 1000 held - 100 for a joiner, not the freed 1500 nameplate.
  EXPECT_NEAR(links[0]->budget().watts, 900, 1e-3);
  // An operator declares it off: its share is freed and the marker consumed.
  auto etcd = EtcdClient::Create(etcd_options(*cluster_));
  ASSERT_TRUE(etcd->put(off_key("s4", "dead"), "{}").ok());
  EXPECT_TRUE(eventually(3, [&] { return std::abs(links[0]->budget().watts - 1500) < 1e-3; }));
  EXPECT_TRUE(eventually(3, [&] { return etcd->get(off_key("s4", "dead"))->kvs.empty(); }));
  EXPECT_TRUE(read_assignment(*etcd, "s4", "dead").status().code() == StatusCode::kNotFound);
}

TEST_F(CoordinatorLive, DeposedCoordinatorCannotWrite) {
  start(1);
  if (!cluster_) return;
  auto a = Coordinator::Start(etcd_options(*cluster_), coord_options("s5", "a", 2000));
  ASSERT_TRUE(a.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s5", "n0", 1000));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  auto etcd = EtcdClient::Create(etcd_options(*cluster_));
  auto lead = etcd->leader(election_name("s5"));
  ASSERT_TRUE(lead.ok());
  LeaderKey stale{election_name("s5"), lead->key, lead->create_revision, lead->lease};
  // Depose a: its leadership lease is revoked behind its back; b takes over.
  ASSERT_TRUE(etcd->lease_revoke(lead->lease).ok());
  auto b = Coordinator::Start(etcd_options(*cluster_), coord_options("s5", "b", 2000));
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(eventually(4, [&] { return (*b)->leader() && !(*a)->leader(); }));
  // a's fencing token no longer writes anything, and nothing on disk carries it afterwards.
  Assignment x;
  x.watts = 1e6;
  x.revision = stale.rev;
  x.expires_unix_s = 1e10;
  auto w = write_assignments(*etcd, "s5", stale, {{"n0", x}});
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(*w);
  const int64_t rev_b = (*b)->stats().leader_rev;
  EXPECT_TRUE(eventually(3, [&] { return all_assigned(links, rev_b); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  auto now = read_assignment(*etcd, "s5", "n0");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->revision, rev_b);
  EXPECT_LE(links[0]->budget().watts, 2000);
}

TEST_F(CoordinatorLive, NodeHoldsItsFloorUntilFirstAssignmentAndRampsAreEvents) {
  start(1);
  if (!cluster_) return;
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s6", "n0", 700));
  // No coordinator yet: the joiner holds its floor (min_w 100, below its 700 W safe share:
  // the site may be fully allocated) and says it is waiting.
  NodeBudget b = links[0]->budget();
  EXPECT_TRUE(b.awaiting_first);
  EXPECT_EQ(b.source, NodeBudget::Source::kSafeShare);
  EXPECT_EQ(b.reason, "awaiting_first_assignment");
  EXPECT_NEAR(b.watts, 100, 1e-9);
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s6", "a", 1200));
  ASSERT_TRUE(c.ok());
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  EXPECT_FALSE(links[0]->budget().awaiting_first);
  // A grid target of 600 W with 1 s ramps, held 1 s: down, held, back up.
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  GridTarget g;
  g.value_w = 600;
  g.start_unix_s = now + 1.5;
  g.end_unix_s = now + 2.5;
  g.ramp_w_per_s = 600;
  g.correlation_id = "dr-6";
  ASSERT_TRUE((*c)->put_grid_target(g).ok());
  ASSERT_TRUE(eventually(6, [&] { return (*c)->stats().ramp_events.size() >= 5; }));
  const CoordinatorStats st = (*c)->stats();
  std::vector<std::string> kinds;
  for (const auto& e : st.ramp_events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"ramp_start", "ramp_end", "target_reached",
                                             "ramp_start", "ramp_end"}));
  EXPECT_EQ(st.ramp_events[0].state, "ramping_down");
  EXPECT_NEAR(st.ramp_events[0].target_w, 600, 1e-9);
  EXPECT_EQ(st.ramp_events[0].correlation_id, "dr-6");
  EXPECT_NEAR(st.ramp_events[2].effective_w, 600, 1e-6);
  EXPECT_GE(st.ramp_events[2].time_unix_s, g.start_unix_s);
  EXPECT_NEAR(st.ramp_events[4].target_w, 1200, 1e-9);
  EXPECT_EQ(st.ramp_state, "idle");
  EXPECT_LE(links[0]->budget().watts, 1200 + 1e-6);
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Two nodes n0, n1 on `site`, each with one 4-GPU job "job-nK" drawing draw_w whose record
// announces `at` through `announce` (its start or its end).
std::vector<std::unique_ptr<NodeLink>> announcing_links(const EtcdCluster& c,
                                                        const std::string& site, double draw_w,
                                                        double at, double JobRecord::*announce) {
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i) {
    const std::string node = "n" + std::to_string(i);
    NodeRecord r = record(node);
    r.draw_w = draw_w;
    r.cap_w = std::max(draw_w, 100.0);
    JobRecord j{"job-" + node, 4, draw_w, 0, 0, 0};
    j.*announce = at;
    r.jobs = {j};
    NodeLinkOptions o;
    o.site = site;
    o.node = node;
    o.safe_share_w = 1500;
    o.lease_ttl_s = 2;
    auto l = NodeLink::Start(etcd_options(c), o, r);
    if (!l.ok()) std::abort();
    links.push_back(std::move(l).value());
  }
  return links;
}

// A gate's slots through a live coordinator: two nodes whose jobs (drawing draw_w) announce the
// same time through `announce` get slots 2 s apart at 700 W/s (each job's rise or fall is
// 1,400 W), through the assignment's `gate`; the other gate stays 0; once n0's job stops
// announcing (its record now `done`), its node has no gate and n1 keeps its slot.
void expect_staggered(const EtcdCluster& c, const std::string& site, double draw_w,
                      double JobRecord::*announce, double CoordinatorOptions::*ramp,
                      double NodeBudget::*gate, double NodeBudget::*other, const JobRecord& done) {
  const double at = unix_now() + 5;
  auto links = announcing_links(c, site, draw_w, at, announce);
  CoordinatorOptions co = coord_options(site, "a", 3000);
  co.*ramp = 700;
  auto coord = Coordinator::Start(etcd_options(c), co);
  ASSERT_TRUE(coord.ok());
  ASSERT_TRUE(
      eventually(5, [&] { return links[0]->budget().*gate > 0 && links[1]->budget().*gate > 0; }));
  EXPECT_NEAR(links[0]->budget().*gate, at, 1e-6);
  EXPECT_NEAR(links[1]->budget().*gate, at + 2, 1e-6);
  EXPECT_EQ(links[0]->budget().*other, 0);
  NodeRecord r = record("n0");
  r.jobs = {done};
  links[0]->update(r);
  EXPECT_TRUE(eventually(5, [&] { return links[0]->budget().*gate == 0; }));
  EXPECT_NEAR(links[1]->budget().*gate, at + 2, 1e-6);  // kept under the waiting job
}

// Staggered starts (start_gate.hpp): each job's rise is 1500 W nameplate less 100 W drawn.
TEST_F(CoordinatorLive, AnnouncedStartsAreStaggeredAtTheStartRamp) {
  start(1);
  if (!cluster_) return;
  expect_staggered(*cluster_, "s9", 100, &JobRecord::starts_at_unix_s,
                   &CoordinatorOptions::start_ramp_w_per_s, &NodeBudget::start_at_unix_s,
                   &NodeBudget::stop_at_unix_s, JobRecord{"job-n0", 4, 800, 0, 0, 0});
}

// Staggered stops (the same gate on announced ends): each job's fall is the 1400 W it draws.
TEST_F(CoordinatorLive, AnnouncedEndsAreStaggeredAtTheStopRamp) {
  start(1);
  if (!cluster_) return;
  expect_staggered(*cluster_, "s10", 1400, &JobRecord::ends_at_unix_s,
                   &CoordinatorOptions::stop_ramp_w_per_s, &NodeBudget::stop_at_unix_s,
                   &NodeBudget::start_at_unix_s, JobRecord{"job-n0", 4, 100, 0, 0, 0});
}

// A forged assignment (an unauthenticated put with a huge revision and a far expiry, as the
// fault campaign wrote) must not pin the node; the leader's next writes must still be taken.
TEST_F(CoordinatorLive, ForgedAssignmentIsRefusedAndTheLeaderStillFollowed) {
  start(1);
  if (!cluster_) return;
  CoordinatorOptions co = coord_options("s7", "a", 2000);
  co.expiry_s = 2;  // a short settling window after the win (split_plan.hpp)
  auto c = Coordinator::Start(etcd_options(*cluster_), co);
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s7", "n0", 1000));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  // Nameplate once the leader's settling window (expiry_s after its win) is over: the budget
  // covers it. Until then a node without an assignment key gets at most its safe share.
  ASSERT_TRUE(eventually(6, [&] { return std::abs(links[0]->budget().watts - 1500) < 1e-3; }))
      << links[0]->budget().watts;
  auto etcd = EtcdClient::Create(etcd_options(*cluster_));
  // An invented revision with a plausible expiry: not the leader's.
  ASSERT_TRUE(etcd->put(assign_key("s7", "n0"),
                        R"({"watts":150,"revision":9000000000000000000,"expires_unix_s":)" +
                            std::to_string(int64_t(unix_now()) + 5) + "}")
                  .ok());
  EXPECT_TRUE(eventually(2, [&] { return links[0]->refused_not_leader() >= 1; }));
  // The campaign's put: also an expiry far ahead.
  ASSERT_TRUE(
      etcd->put(assign_key("s7", "n0"),
                R"({"watts":150,"revision":9000000000000000000,"expires_unix_s":9999999999})")
          .ok());
  // For 2.5 s (two refreshes and more): never on the forged 150 W, always the leader's.
  const int64_t rev = (*c)->stats().leader_rev;
  const auto t0 = Clock::now();
  bool forged_applied = false;
  while (seconds_since(t0) < 2.5) {
    const NodeBudget b = links[0]->budget();
    forged_applied |= std::abs(b.watts - 150) < 1e-6;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(forged_applied);
  EXPECT_NEAR(links[0]->budget().watts, 1500, 1e-3);
  EXPECT_EQ(links[0]->budget().revision, rev);
  // Out of range: more than the nameplate, or an expiry a day ahead, from the real leader.
  ASSERT_TRUE(etcd->put(assign_key("s7", "n0"), R"({"watts":5000,"revision":)" +
                                                    std::to_string(rev) + R"(,"expires_unix_s":)" +
                                                    std::to_string(int64_t(unix_now()) + 3) + "}")
                  .ok());
  ASSERT_TRUE(etcd->put(assign_key("s7", "n0"), R"({"watts":100,"revision":)" +
                                                    std::to_string(rev) + R"(,"expires_unix_s":)" +
                                                    std::to_string(int64_t(unix_now()) + 86400) +
                                                    "}")
                  .ok());
  EXPECT_TRUE(eventually(2, [&] { return links[0]->refused_out_of_range() >= 3; }));
  EXPECT_NEAR(links[0]->budget().watts, 1500, 1e-3);
}

// etcd rebuilt empty: revisions start over (the new leader key's create revision is far below
// the old one). The links re-register and follow the new leader without a restart.
TEST_F(CoordinatorLive, LinksFollowTheNewLeaderAfterEtcdIsRebuiltEmpty) {
  start(1);
  if (!cluster_) return;
  {
    auto etcd = EtcdClient::Create(etcd_options(*cluster_));
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(etcd->put("/other/k", std::to_string(i)).ok());
  }
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s8", "a", 2000));
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i) links.push_back(link(*cluster_, "s8", "n" + std::to_string(i), 900));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  const int64_t old_rev = (*c)->stats().leader_rev;
  ASSERT_GT(old_rev, 60);
  ASSERT_TRUE(cluster_->rebuild_empty().ok());
  // The coordinator loses its lease, campaigns again on the new cluster and writes anew.
  ASSERT_TRUE(eventually(10, [&] {
    const auto st = (*c)->stats();
    return st.leader && st.leader_rev < old_rev;
  }));
  const int64_t new_rev = (*c)->stats().leader_rev;
  EXPECT_TRUE(eventually(10,
                         [&] {
                           for (const auto& l : links) {
                             const NodeBudget b = l->budget();
                             if (b.source != NodeBudget::Source::kAssignment ||
                                 b.revision != new_rev)
                               return false;
                           }
                           return true;
                         }))
      << "links on " << links[0]->budget().reason << " / " << links[1]->budget().reason;
  for (const auto& l : links) EXPECT_EQ(l->budget().revision, new_rev);
  EXPECT_LE(agents.max_w(), 2000 + 1e-6);
}

// After an etcd rebuild the new leader knows no assignments. A node that has not re-registered
// yet (n1, crashed here so that it stays away) still applies the old leader's assignment until
// it expires; meanwhile the nodes that are back must not be split the whole budget.
TEST_F(CoordinatorLive, NodesNotBackAfterAnEtcdRebuildKeepTheirShareUntilItExpires) {
  start(1);
  if (!cluster_) return;
  {  // revisions of the old cluster well above those the rebuilt one will reach
    auto etcd = EtcdClient::Create(etcd_options(*cluster_));
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(etcd->put("/other/k", std::to_string(i)).ok());
  }
  CoordinatorOptions co = coord_options("s10", "a", 2000);
  co.expiry_s = 6;  // a window long enough for the new leader to write within it
  auto c = Coordinator::Start(etcd_options(*cluster_), co);
  ASSERT_TRUE(c.ok());
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i) links.push_back(link(*cluster_, "s10", "n" + std::to_string(i), 900));
  {
    BudgetSampler agents(&links);
    ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  }
  const int64_t old_rev = (*c)->stats().leader_rev;
  ASSERT_GT(old_rev, 60);
  links[1]->crash();  // keeps its last assignment until it expires, never re-registers
  const NodeBudget away = links[1]->budget();
  ASSERT_EQ(away.source, NodeBudget::Source::kAssignment);
  ASSERT_TRUE(cluster_->rebuild_empty().ok());
  // Until n1's old assignment expires: n0 applies and reports its budget every 50 ms.
  double max_w = 0;
  bool n0_on_new_leader = false;
  while (unix_now() < away.expires_unix_s - 0.1) {
    const NodeBudget b0 = links[0]->budget();
    const NodeBudget b1 = links[1]->budget();
    max_w = std::max(max_w, b0.watts + b1.watts);
    n0_on_new_leader |= b0.source == NodeBudget::Source::kAssignment && b0.revision != old_rev;
    NodeRecord r = record("n0");
    r.cap_w = b0.watts;
    r.time_unix_s = unix_now();
    links[0]->update(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(n0_on_new_leader) << "the new leader wrote nothing within n1's old expiry";
  EXPECT_LE(max_w, 2000 + 1e-6) << "n1 still on " << away.watts << " W";
}

// A node that joins a fully allocated site holds its floor (its GPUs' minimum caps) before
// the leader has lowered anyone: the split must have left room for that floor.
TEST_F(CoordinatorLive, AJoinerAtItsFloorFitsInAFullyAllocatedBudget) {
  start(1);
  if (!cluster_) return;
  CoordinatorOptions co = coord_options("s11", "a", 3000);
  co.expiry_s = 2;  // the settling window after the win ends before the join
  co.refresh_s = 1;
  auto c = Coordinator::Start(etcd_options(*cluster_), co);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(eventually(5, [&] { return (*c)->leader(); }));
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i)
    links.push_back(link(*cluster_, "s11", "n" + std::to_string(i), 1000));
  {
    BudgetSampler agents(&links);
    ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));  // past the settling window
    ASSERT_TRUE(eventually(3, [&] {
      return links[0]->budget().watts + links[1]->budget().watts > 2000 + 1;
    })) << "the budget is not allocated above the safe shares";
  }
  links.push_back(link(*cluster_, "s11", "n2", 1000));
  double max_w = 0;
  {
    BudgetSampler agents(&links);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    max_w = agents.max_w();
  }
  EXPECT_TRUE(all_assigned(links)) << "the joiner got no assignment within 3 s";
  EXPECT_LE(max_w, 3000 + 1e-6);
}

// Two joiners at once: each holds its floor before the leader has lowered anyone, so one
// floor of room is not enough (3100 W of budgets on 3000 W). Announced joiners (a join marker
// per node, written before its agent starts) get their floors reserved, one per pending
// joiner, and the marker goes once the node has its assignment.
TEST_F(CoordinatorLive, AnnouncedJoinersAtTheirFloorsFitTogether) {
  start(1);
  if (!cluster_) return;
  CoordinatorOptions co = coord_options("s12", "a", 3000);
  co.expiry_s = 2;  // the settling window after the win ends before the join
  co.refresh_s = 1;
  auto c = Coordinator::Start(etcd_options(*cluster_), co);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(eventually(5, [&] { return (*c)->leader(); }));
  std::vector<std::unique_ptr<NodeLink>> links;
  for (int i = 0; i < 2; ++i)
    links.push_back(link(*cluster_, "s12", "n" + std::to_string(i), 1000));
  auto admin = EtcdClient::Create(etcd_options(*cluster_));
  ASSERT_TRUE(admin.ok());
  {
    BudgetSampler agents(&links);
    ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(2200));  // past the settling window
    for (const char* n : {"n2", "n3"})
      ASSERT_TRUE(admin->put(std::string("/flexwatt/s12/join/") + n, R"({"min_w":100})").ok());
    // Room for both announced joiners (and one unannounced): the others confirm 1350 W each.
    EXPECT_TRUE(eventually(
        4,
        [&] { return links[0]->budget().watts + links[1]->budget().watts <= 3000 - 300 + 1e-6; }))
        << links[0]->budget().watts << " + " << links[1]->budget().watts;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // their records confirm it
  }
  links.push_back(link(*cluster_, "s12", "n2", 1000));
  links.push_back(link(*cluster_, "s12", "n3", 1000));
  double max_w = 0;
  {
    BudgetSampler agents(&links);
    std::this_thread::sleep_for(std::chrono::seconds(3));
    max_w = agents.max_w();
  }
  EXPECT_TRUE(all_assigned(links)) << "the joiners got no assignment within 3 s";
  EXPECT_LE(max_w, 3000 + 1e-6);
  auto markers = admin->get_prefix("/flexwatt/s12/join/");
  ASSERT_TRUE(markers.ok());
  EXPECT_TRUE(markers->kvs.empty()) << "join markers left after the joiners were assigned";
}

// Issue 45: GET /v1/grid/status says how deep the site can go, before and during an event: two
// nodes whose floors are 100 W each (the equal allocator keeps no tiers, so the floors are what
// holds) against the deepest event in force or still to come.
TEST_F(CoordinatorLive, GridStatusReportsTheHoldableTargetAndItsShortfall) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s13", "a", 2000));
  ASSERT_TRUE(c.ok());
  GridAuth open;
  open.allow_unauthenticated_writes = true;  // loopback
  auto g = GridServer::Start(c->get(), "127.0.0.1", 0, /*ramp_w_per_s=*/0, 1.0, open);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s13", "n0", 600));
  links.push_back(link(*cluster_, "s13", "n1", 600));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  httplib::Client http("127.0.0.1", (*g)->port());
  auto status = [&] {
    auto r = http.Get("/v1/grid/status");
    return r && r->status == 200 ? nlohmann::json::parse(r->body) : nlohmann::json();
  };
  nlohmann::json j;
  ASSERT_TRUE(eventually(3, [&] {
    j = status();
    return j.value("leader", false) && j.value("site_floor_w", 0.0) == 200;
  })) << j.dump();
  EXPECT_NEAR(j["holdable_target_w"].get<double>(), 200, 1e-9);
  EXPECT_DOUBLE_EQ(j["shortfall_w"].get<double>(), 0);  // no event: nothing to fall short of
  EXPECT_TRUE(j["holdable"].get<bool>());
  EXPECT_TRUE(j["shortfall_event"].is_null());
  // An event still to come, 50 W under the floors: reported before it starts.
  const double now = unix_now();
  auto num = [](double t) { return std::to_string(int64_t(t)); };
  auto put = [&](const std::string& body) {
    auto r = http.Put("/v1/grid/target", body, "application/json");
    return r ? r->status : -1;
  };
  ASSERT_EQ(put(R"({"value":150,"correlation_id":"deep","start_time":)" + num(now + 60) +
                R"(,"end_time":)" + num(now + 90) + "}"),
            200);
  ASSERT_TRUE(eventually(3, [&] {
    j = status();
    return j.value("shortfall_event", nlohmann::json()) == "deep";
  })) << j.dump();
  EXPECT_NEAR(j["shortfall_w"].get<double>(), 50, 1e-6);
  EXPECT_FALSE(j["holdable"].get<bool>());
  // In force now, at 1200 W: holdable.
  ASSERT_EQ(put(R"({"value":null,"correlation_id":"deep"})"), 200);
  ASSERT_EQ(put(R"({"value":1200,"correlation_id":"cut","start_time":)" + num(now - 1) +
                R"(,"end_time":)" + num(now + 30) + "}"),
            200);
  ASSERT_TRUE(eventually(3, [&] {
    j = status();
    return j.value("shortfall_event", nlohmann::json()) == "cut";
  })) << j.dump();
  EXPECT_DOUBLE_EQ(j["shortfall_w"].get<double>(), 0);
  EXPECT_TRUE(j["holdable"].get<bool>());
}

// The grid endpoint keeps a schedule: a future event does not cancel the active one, an event
// wholly in the past is refused (409), and every interval of an OpenADR event is honoured.
TEST_F(CoordinatorLive, GridEventsAreScheduledNotReplaced) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s9", "a", 2000));
  ASSERT_TRUE(c.ok());
  GridAuth open;
  open.allow_unauthenticated_writes = true;  // loopback
  auto g = GridServer::Start(c->get(), "127.0.0.1", 0, /*ramp_w_per_s=*/0, 1.0, open);
  ASSERT_TRUE(g.ok()) << g.status().message();
  std::vector<std::unique_ptr<NodeLink>> links;
  links.push_back(link(*cluster_, "s9", "n0", 600));
  links.push_back(link(*cluster_, "s9", "n1", 600));
  BudgetSampler agents(&links);
  ASSERT_TRUE(eventually(5, [&] { return all_assigned(links); }));
  httplib::Client http("127.0.0.1", (*g)->port());
  auto put = [&](const std::string& body) {
    auto r = http.Put("/v1/grid/target", body, "application/json");
    return r ? r->status : -1;
  };
  const double now = unix_now();
  auto num = [](double t) { return std::to_string(int64_t(t)); };
  // Active: 1200 W from a second ago for 8 s.
  ASSERT_EQ(put(R"({"value":1200,"correlation_id":"active","start_time":)" + num(now - 1) +
                R"(,"end_time":)" + num(now + 8) + "}"),
            200);
  ASSERT_TRUE(eventually(3, [&] { return (*c)->stats().last_plan.effective_w <= 1200 + 1e-6; }));
  // A future event announced during it: the active cut stays.
  EXPECT_EQ(put(R"({"value":1500,"correlation_id":"future","start_time":)" + num(now + 60) +
                R"(,"end_time":)" + num(now + 90) + "}"),
            200);
  // Wholly in the past: refused, and nothing changes.
  const int past = put(R"({"value":100,"correlation_id":"past","start_time":)" + num(now - 60) +
                       R"(,"end_time":)" + num(now - 30) + "}");
  EXPECT_TRUE(past == 409 || past == 422) << past;
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // a refresh round and more
  EXPECT_NEAR((*c)->stats().last_plan.effective_w, 1200, 1e-6);
  EXPECT_LE(links[0]->budget().watts + links[1]->budget().watts, 1200 + 1e-6);
  // OpenADR with two intervals: 900 W, then 600 W. The second must be honoured too.
  const double t1 = unix_now() + 1;
  const std::string ev = R"({"id":"ev-2","payloadDescriptors":[{"payloadType":
      "IMPORT_CAPACITY_LIMIT","units":"W"}],"intervals":[
      {"id":0,"intervalPeriod":{"start":)" +
                         num(t1) + R"(,"duration":"PT1S"},
       "payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[900]}]},
      {"id":1,"intervalPeriod":{"start":)" +
                         num(t1 + 1) + R"(,"duration":"PT1S"},
       "payloads":[{"type":"IMPORT_CAPACITY_LIMIT","values":[600]}]}]})";
  auto r = http.Post("/v1/grid/openadr/event", ev, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(eventually(4, [&] { return (*c)->stats().last_plan.effective_w <= 600 + 1e-6; }))
      << "effective " << (*c)->stats().last_plan.effective_w;
  EXPECT_TRUE(eventually(4, [&] {
    return std::abs((*c)->stats().last_plan.effective_w - 1200) < 1e-6;
  })) << "back to the active event after the intervals";
  EXPECT_LE(agents.max_w(), 2000 + 1e-6);
}

using testing_plans::constant_plan;

// Issue 46 ("a pipeline that spans nodes gets its per-node share of the plan through the
// coordinator"): nothing carried a plan to the nodes. The coordinator's PUT /v1/plans/<job>
// checks a plan and stores it; each node's link reads the plans of its own jobs (not the
// others'), follows a replacement and a deletion, and counts the changes.
TEST_F(CoordinatorLive, PlansPutThroughTheCoordinatorReachTheNodesThatRunTheJob) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s15", "a", 2000));
  ASSERT_TRUE(c.ok());
  GridAuth open;
  open.allow_unauthenticated_writes = true;  // loopback
  auto g = GridServer::Start(c->get(), "127.0.0.1", 0, 0, 1.0, open);
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto with_job = [&](const std::string& node, const std::string& job) {
    NodeLinkOptions o;
    o.site = "s15";
    o.node = node;
    o.safe_share_w = 600;
    o.lease_ttl_s = 2;
    NodeRecord r = record(node);
    r.jobs.push_back({});
    r.jobs.back().id = job;
    r.jobs.back().gpus = 4;
    auto l = NodeLink::Start(etcd_options(*cluster_), o, r);
    if (!l.ok()) std::abort();
    return std::move(l).value();
  };
  auto runs_it = with_job("n0", "pp");
  auto other = with_job("n1", "grpo");
  httplib::Client http("127.0.0.1", (*g)->port());
  auto put = [&](const std::string& job, const std::string& body) {
    return http.Put("/v1/plans/" + job, body, "application/json");
  };
  // A bad plan is refused naming its field, and nothing is stored.
  nlohmann::json bad = nlohmann::json::parse(constant_plan({300, 250}));
  bad["constant"]["stages"][1]["cap_w"] = "low";
  auto r = put("pp", bad.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("constant.stages[1].cap_w"), std::string::npos) << r->body;
  r = put("pp", "{not json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  r = http.Get("/v1/plans/pp");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // Stored: the node that runs the job reads it, the other does not.
  const std::string first = constant_plan({300, 250});
  r = put("pp", first);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const int64_t rev = nlohmann::json::parse(r->body).at("revision").get<int64_t>();
  EXPECT_TRUE(eventually(4, [&] { return runs_it->plan("pp").has_value(); }));
  ASSERT_TRUE(runs_it->plan("pp").has_value());
  EXPECT_EQ(runs_it->plan("pp")->text, first);
  EXPECT_EQ(runs_it->plan("pp")->mod_revision, rev);
  EXPECT_FALSE(other->plan("pp").has_value());
  EXPECT_EQ(other->plan_changes(), 0);
  r = http.Get("/v1/plans");
  ASSERT_TRUE(r);
  const nlohmann::json list = nlohmann::json::parse(r->body);
  ASSERT_EQ(list.at("plans").size(), 1u) << r->body;
  EXPECT_EQ(list["plans"][0]["job"], "pp");
  EXPECT_EQ(list["plans"][0]["stages"], 2);
  EXPECT_EQ(list["plans"][0]["best_mode"], "constant");
  // Replaced: the node follows; deleted: it forgets.
  const int64_t seen = runs_it->plan_changes();
  const std::string second = constant_plan({280, 240});
  ASSERT_EQ(put("pp", second)->status, 200);
  EXPECT_TRUE(eventually(4, [&] {
    auto p = runs_it->plan("pp");
    return p && p->text == second;
  }));
  EXPECT_GT(runs_it->plan_changes(), seen);
  r = http.Delete("/v1/plans/pp");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(eventually(4, [&] { return !runs_it->plan("pp").has_value(); }));
  r = http.Delete("/v1/plans/pp");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  // A job name outside [A-Za-z0-9._-] matches no route.
  r = put("p%20p", first);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

// Grid writes need a bearer token of scope control; without a token lookup they are refused
// unless explicitly allowed on loopback. Every write is one audit line.
// Issue 43 item 6: the grid server ran a plain httplib::Server without the agent's limits: a
// megabyte body was read and parsed. A body over GridServer::kMaxBodyBytes is now refused
// (413) before it is read, and an ordinary write still works on the same server.
TEST_F(CoordinatorLive, GridServerRefusesAnOversizedBodyBeforeReadingIt) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s14", "a", 2000));
  ASSERT_TRUE(c.ok());
  GridAuth open;
  open.allow_unauthenticated_writes = true;  // loopback
  auto g = GridServer::Start(c->get(), "127.0.0.1", 0, 0, 1.0, open);
  ASSERT_TRUE(g.ok()) << g.status().message();
  httplib::Client http("127.0.0.1", (*g)->port());
  const std::string big =
      R"({"value":500,"correlation_id":"big","pad":")" + std::string(1 << 20, 'a') + "\"}";
  auto r = http.Put("/v1/grid/target", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  auto ok =
      http.Put("/v1/grid/target", R"({"value":500,"correlation_id":"cut"})", "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(CoordinatorLive, GridWritesNeedAControlTokenAndAreAudited) {
  start(1);
  if (!cluster_) return;
  auto c = Coordinator::Start(etcd_options(*cluster_), coord_options("s10", "a", 2000));
  ASSERT_TRUE(c.ok());
  std::mutex mu;
  std::vector<GridAuth::Write> audit;
  GridAuth auth;
  auth.lookup = [](std::string_view token) -> std::optional<std::pair<std::string, int>> {
    if (token == "control-token-0123456789") return std::make_pair("ops", kGridScopeControl);
    if (token == "read-token-0123456789") return std::make_pair("viewer", kGridScopeRead);
    return std::nullopt;
  };
  auth.audit = [&](const GridAuth::Write& w) {
    std::lock_guard<std::mutex> lk(mu);
    audit.push_back(w);
  };
  auto g = GridServer::Start(c->get(), "127.0.0.1", 0, 0, 1.0, auth);
  ASSERT_TRUE(g.ok()) << g.status().message();
  httplib::Client http("127.0.0.1", (*g)->port());
  const std::string body = R"({"value":500,"correlation_id":"cut"})";
  auto put = [&](const char* token) {
    httplib::Headers h;
    if (token) h.emplace("Authorization", std::string("Bearer ") + token);
    auto r = http.Put("/v1/grid/target", h, body, "application/json");
    return r ? r->status : -1;
  };
  EXPECT_EQ(put(nullptr), 401);
  EXPECT_EQ(put("guess-guess-guess-guess"), 401);
  EXPECT_EQ(put("read-token-0123456789"), 403);
  auto cancel =
      http.Put("/v1/grid/target", R"({"value":null,"correlation_id":"cut"})", "application/json");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 401);  // cancelling a real event is a write too
  auto adr = http.Post("/v1/grid/openadr/event", "{}", "application/json");
  ASSERT_TRUE(adr);
  EXPECT_EQ(adr->status, 401);
  EXPECT_EQ((*g)->writes_accepted(), 0);
  auto status = http.Get("/v1/grid/status");
  ASSERT_TRUE(status);
  EXPECT_EQ(status->status, 401);  // reads need a read token when tokens are configured
  EXPECT_EQ(put("control-token-0123456789"), 200);
  EXPECT_EQ((*g)->writes_accepted(), 1);
  EXPECT_EQ((*g)->writes_refused(), 5);
  {
    std::lock_guard<std::mutex> lk(mu);
    ASSERT_EQ(audit.size(), 6u);
    EXPECT_EQ(audit[0].who, "unauthenticated");
    EXPECT_EQ(audit[0].status, 401);
    EXPECT_TRUE(audit[0].body.empty());  // nothing an unauthenticated caller sent is kept
    EXPECT_EQ(audit[2].who, "viewer");
    EXPECT_EQ(audit[2].status, 403);
    EXPECT_EQ(audit[5].who, "ops");
    EXPECT_EQ(audit[5].path, "/v1/grid/target");
    EXPECT_EQ(audit[5].status, 200);
  }
  // Without tokens: writes refused unless allowed, and allowing them needs a loopback host.
  auto open = GridServer::Start(c->get(), "127.0.0.1", 0, 0, 1.0, GridAuth{});
  ASSERT_TRUE(open.ok());
  httplib::Client http2("127.0.0.1", (*open)->port());
  auto r2 = http2.Put("/v1/grid/target", body, "application/json");
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->status, 401);
  GridAuth anyone;
  anyone.allow_unauthenticated_writes = true;
  auto wide = GridServer::Start(c->get(), "0.0.0.0", 0, 0, 1.0, anyone);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("not loopback"), std::string::npos);
}

}  // namespace
}  // namespace fw::fleet

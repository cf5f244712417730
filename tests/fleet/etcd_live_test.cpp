// Tests against a real etcd (Debian's etcd-server) started per test on loopback ports.
// Without etcd it skips with a message, or fails under CI=true (require_tool.hpp). Every wait
// polls with a deadline.

#include <gtest/gtest.h>

#include <future>
#include <mutex>

#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "etcd_harness.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/etcd_watch.hpp"
#include "fleet/lease_keeper.hpp"
#include "fleet/site_store.hpp"

namespace fw::fleet {
namespace {

using Clock = std::chrono::steady_clock;
using testing::EtcdCluster;
using testing::eventually;

EtcdClient make_client(std::vector<std::string> endpoints, int attempts = 5) {
  EtcdClientOptions o;
  o.endpoints = std::move(endpoints);
  o.request_timeout_s = 3;
  o.max_attempts = attempts;
  o.backoff_initial_s = 0.05;
  o.backoff_max_s = 0.5;
  o.seed = 7;
  auto c = EtcdClient::Create(o);
  if (!c.ok()) std::abort();
  return std::move(c).value();
}

class EtcdLive : public ::testing::Test {
 protected:
  void SetUp() override {
    FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (etcd-server, or set FLEXWATT_ETCD)");
    auto c = EtcdCluster::Start(1);
    ASSERT_TRUE(c.ok()) << c.status().message();
    cluster_ = std::move(c).value();
    client_ = std::make_unique<EtcdClient>(make_client(cluster_->endpoints()));
  }
  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<EtcdClient> client_;
};

TEST_F(EtcdLive, PutRangeDelete) {
  EtcdClient& c = *client_;
  auto p1 = c.put("/t/a", "1");
  ASSERT_TRUE(p1.ok()) << p1.status().message();
  ASSERT_TRUE(c.put("/t/b", std::string("\0\xff", 2)).ok());
  ASSERT_TRUE(c.put("/u", "outside").ok());

  auto r = c.get_prefix("/t/");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->kvs.size(), 2u);
  EXPECT_EQ(r->count, 2);
  EXPECT_EQ(r->kvs[0].key, "/t/a");
  EXPECT_EQ(r->kvs[0].value, "1");
  EXPECT_EQ(r->kvs[0].version, 1);
  EXPECT_EQ(r->kvs[0].create_revision, p1->revision);
  EXPECT_EQ(r->kvs[1].value, std::string("\0\xff", 2));  // binary values survive base64

  auto missing = c.get("/t/none");  // zero fields omitted: no kvs, no count
  ASSERT_TRUE(missing.ok());
  EXPECT_TRUE(missing->kvs.empty());
  EXPECT_EQ(missing->count, 0);

  auto p2 = c.put("/t/a", "2", 0, /*prev_kv=*/true);
  ASSERT_TRUE(p2.ok());
  ASSERT_TRUE(p2->prev_kv.has_value());
  EXPECT_EQ(p2->prev_kv->value, "1");
  EXPECT_GT(p2->revision, p1->revision);

  auto d = c.erase("/t/", prefix_end("/t/"));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->deleted, 2);
  EXPECT_TRUE(c.get_prefix("/t/")->kvs.empty());
  EXPECT_EQ(c.get("/u")->kvs.size(), 1u);
}

TEST_F(EtcdLive, TxnCompareAndSwap) {
  EtcdClient& c = *client_;
  // Create-if-absent succeeds once.
  auto t1 = c.txn({Compare::Absent("/cas")}, {TxnOp::Put("/cas", "v1")});
  ASSERT_TRUE(t1.ok()) << t1.status().message();
  EXPECT_TRUE(t1->succeeded);
  auto t2 = c.txn({Compare::Absent("/cas")}, {TxnOp::Put("/cas", "other")}, {TxnOp::Get("/cas")});
  ASSERT_TRUE(t2.ok());
  EXPECT_FALSE(t2->succeeded);  // "succeeded" omitted by the gateway when false
  ASSERT_EQ(t2->responses.size(), 1u);
  ASSERT_EQ(t2->responses[0].range.kvs.size(), 1u);
  const int64_t mod = t2->responses[0].range.kvs[0].mod_revision;
  EXPECT_EQ(t2->responses[0].range.kvs[0].value, "v1");

  // Swap guarded by the mod revision: the first wins, the stale one fails.
  auto s1 =
      c.txn({Compare::ModRevision("/cas", Compare::Op::kEqual, mod)}, {TxnOp::Put("/cas", "v2")});
  ASSERT_TRUE(s1.ok());
  EXPECT_TRUE(s1->succeeded);
  auto s2 =
      c.txn({Compare::ModRevision("/cas", Compare::Op::kEqual, mod)}, {TxnOp::Put("/cas", "v3")});
  ASSERT_TRUE(s2.ok());
  EXPECT_FALSE(s2->succeeded);
  EXPECT_EQ(c.get("/cas")->kvs.at(0).value, "v2");

  // Value and version compares; a delete in the success branch.
  auto s3 = c.txn({Compare::Value("/cas", Compare::Op::kEqual, "v2"),
                   Compare::Version("/cas", Compare::Op::kEqual, 2)},
                  {TxnOp::Delete("/cas")});
  ASSERT_TRUE(s3.ok());
  EXPECT_TRUE(s3->succeeded);
  ASSERT_EQ(s3->responses.size(), 1u);
  EXPECT_EQ(s3->responses[0].deleted, 1);
  EXPECT_TRUE(c.get("/cas")->kvs.empty());
}

TEST_F(EtcdLive, LeaseExpiryRemovesKeysAndDeadRenewalIsDetected) {
  EtcdClient& c = *client_;
  auto l = c.lease_grant(1);  // below the minimum: etcd raises it
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_GE(l->ttl_s, 2);
  ASSERT_TRUE(c.put("/lease/k", "v", l->id).ok());
  auto got = c.get("/lease/k");
  ASSERT_EQ(got->kvs.size(), 1u);
  EXPECT_EQ(got->kvs[0].lease, l->id);
  EXPECT_TRUE(eventually(l->ttl_s + 4.0, [&] { return c.get("/lease/k")->kvs.empty(); }));
  auto k = c.lease_keepalive(l->id);  // HTTP 200 without TTL
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound) << k.status().message();
  auto p2 = c.put("/lease/k2", "v", l->id);
  EXPECT_EQ(p2.status().code(), StatusCode::kNotFound) << p2.status().message();
}

TEST_F(EtcdLive, KeepaliveKeepsKeysAndRevokeRemovesThem) {
  EtcdClient& c = *client_;
  auto l = c.lease_grant(2);
  ASSERT_TRUE(l.ok());
  ASSERT_TRUE(c.put("/keep/k", "v", l->id).ok());
  auto keeper = LeaseKeeper::Start(&c, *l);
  // Outlive the TTL by a margin: without renewals the key would be gone by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(l->ttl_s * 1000 + 1500));
  EXPECT_EQ(c.get("/keep/k")->kvs.size(), 1u);
  EXPECT_GE(keeper->renewals(), 2);
  EXPECT_FALSE(keeper->lost());
  // Revoked from outside: the keeper notices at its next renewal.
  ASSERT_TRUE(c.lease_revoke(l->id).ok());
  EXPECT_TRUE(c.get("/keep/k")->kvs.empty());
  EXPECT_TRUE(eventually(l->ttl_s + 1.0, [&] { return keeper->lost(); }));
  const Status again = c.lease_revoke(l->id);
  EXPECT_EQ(again.code(), StatusCode::kNotFound) << again.message();
}

TEST_F(EtcdLive, KeeperPresumesLeaseLostWhenEtcdIsUnreachable) {
  EtcdClient& c = *client_;
  auto l = c.lease_grant(2);
  ASSERT_TRUE(l.ok());
  std::promise<Status> why;
  auto keeper = LeaseKeeper::Start(&c, *l, [&](const Status& s) { why.set_value(s); });
  ASSERT_TRUE(eventually(3, [&] { return keeper->renewals() >= 1; }));
  const auto t0 = Clock::now();
  cluster_->kill_member(0);
  auto f = why.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(l->ttl_s + 2)), std::future_status::ready);
  const Status s = f.get();
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("presumed expired"), std::string::npos) << s.message();
  EXPECT_LE(std::chrono::duration<double>(Clock::now() - t0).count(), l->ttl_s + 0.5);
  EXPECT_TRUE(keeper->lost());
}

TEST_F(EtcdLive, WatchSeesPutsInOrder) {
  EtcdClient& c = *client_;
  std::mutex mu;
  std::vector<WatchEvent> seen;
  WatchOptions o;
  o.key = "/w/";
  o.range_end = prefix_end("/w/");
  o.prev_kv = true;
  auto w = EtcdWatch::Start(&c, o, [&](const std::vector<WatchEvent>& ev) {
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(seen.end(), ev.begin(), ev.end());
  });
  ASSERT_TRUE(w->wait_created(5));
  const int n = 20;
  for (int i = 0; i < n; ++i)
    ASSERT_TRUE(c.put("/w/k" + std::to_string(i % 4), std::to_string(i)).ok());
  ASSERT_TRUE(c.put("/outside", "x").ok());
  ASSERT_TRUE(c.erase("/w/k0").ok());
  ASSERT_TRUE(eventually(5, [&] {
    std::lock_guard<std::mutex> lock(mu);
    return seen.size() >= n + 1;
  }));
  // cancel() of an idle stream returns without waiting for the 30 s idle timeout.
  const auto t0 = Clock::now();
  w->cancel();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 2.0);
  EXPECT_TRUE(w->ended());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(seen.size(), size_t(n + 1));
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(seen[i].type, WatchEvent::Type::kPut);
    EXPECT_EQ(seen[i].kv.value, std::to_string(i));
    if (i > 0) {
      EXPECT_EQ(seen[i].kv.mod_revision, seen[i - 1].kv.mod_revision + 1);
    }
  }
  EXPECT_EQ(seen[n].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(seen[n].kv.key, "/w/k0");
  ASSERT_TRUE(seen[n].prev_kv.has_value());
  EXPECT_EQ(seen[n].prev_kv->value, "16");
}

TEST_F(EtcdLive, WatchFromPastRevisionAndCompaction) {
  EtcdClient& c = *client_;
  auto p = c.put("/h", "a");
  ASSERT_TRUE(c.put("/h", "b").ok());
  std::mutex mu;
  std::vector<std::string> values;
  WatchOptions o;
  o.key = "/h";
  o.start_revision = p->revision;
  auto w = EtcdWatch::Start(&c, o, [&](const std::vector<WatchEvent>& ev) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : ev) values.push_back(e.kv.value);
  });
  ASSERT_TRUE(eventually(5, [&] {
    std::lock_guard<std::mutex> lock(mu);
    return values.size() >= 2;
  }));
  w->cancel();
  EXPECT_EQ(values, (std::vector<std::string>{"a", "b"}));

  // A watch from a compacted revision ends with a NotFound naming the compaction.
  auto last = c.put("/h", "c");
  ASSERT_TRUE(c.call("/v3/kv/compaction", Json{{"revision", std::to_string(last->revision)}},
                     EtcdClient::Retry::kIdempotent)
                  .ok());
  std::promise<Status> err;
  auto w2 = EtcdWatch::Start(&c, o, {}, [&](const Status& s) { err.set_value(s); });
  auto f = err.get_future();
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  Status s = f.get();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("compacted"), std::string::npos) << s.message();
  EXPECT_TRUE(eventually(2, [&] { return w2->ended(); }));
}

TEST_F(EtcdLive, ElectionOneLeaderResignHandsOver) {
  EtcdClient& c = *client_;
  auto la = c.lease_grant(10), lb = c.lease_grant(10);
  ASSERT_TRUE(la.ok() && lb.ok());
  const std::string name = "/flexwatt/s1/coordinator";
  auto none = c.leader(name);
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound) << none.status().message();

  auto a = c.campaign(name, la->id, "a", 5);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->name, name);
  EXPECT_EQ(a->lease, la->id);
  EXPECT_EQ(c.leader(name)->value, "a");
  ASSERT_TRUE(c.proclaim(*a, "a2").ok());
  EXPECT_EQ(c.leader(name)->value, "a2");

  // Fencing: writes guarded by the leader key's create revision.
  auto fenced = [&](const LeaderKey& l, const std::string& v) {
    return c.txn({Compare::CreateRevision(l.key, Compare::Op::kEqual, l.rev)},
                 {TxnOp::Put("/flexwatt/s1/assign/n1", v)});
  };
  EXPECT_TRUE(fenced(*a, "from-a")->succeeded);

  auto b = std::async(std::launch::async, [&] {
    EtcdClient cb = make_client(cluster_->endpoints());
    return cb.campaign(name, lb->id, "b", 10);
  });
  // B must still be waiting while A leads (a bounded negative check).
  EXPECT_EQ(b.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  EXPECT_EQ(c.leader(name)->value, "a2");

  ASSERT_TRUE(c.resign(*a).ok());
  ASSERT_EQ(b.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  auto bl = b.get();
  ASSERT_TRUE(bl.ok()) << bl.status().message();
  EXPECT_EQ(c.leader(name)->value, "b");
  EXPECT_FALSE(fenced(*a, "stale")->succeeded);  // A lost leadership: it cannot write
  EXPECT_TRUE(fenced(*bl, "from-b")->succeeded);
  const Status stale = c.proclaim(*a, "a3");
  EXPECT_EQ(stale.code(), StatusCode::kNotFound) << stale.message();
  EXPECT_EQ(c.get("/flexwatt/s1/assign/n1")->kvs.at(0).value, "from-b");
}

TEST_F(EtcdLive, CampaignWaitsForLeaderLeaseExpiry) {
  EtcdClient& c = *client_;
  auto la = c.lease_grant(2), lb = c.lease_grant(10);
  ASSERT_TRUE(la.ok() && lb.ok());
  const std::string name = "/e2";
  ASSERT_TRUE(c.campaign(name, la->id, "a", 5).ok());
  const auto t0 = Clock::now();
  auto b = c.campaign(name, lb->id, "b", la->ttl_s + 5.0);  // A never renews
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(c.leader(name)->value, "b");
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), la->ttl_s + 3.0);

  // A campaign that cannot win within its timeout gives up with Unavailable.
  auto lc = c.lease_grant(10);
  auto cc = c.campaign(name, lc->id, "c", 0.5);
  EXPECT_EQ(cc.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.leader(name)->value, "b");
  // Its campaign key is withdrawn: after B resigns nobody leads.
  EXPECT_EQ(c.get_prefix(name + "/")->kvs.size(), 1u);
  ASSERT_TRUE(c.resign(*b).ok());
  EXPECT_EQ(c.leader(name).status().code(), StatusCode::kNotFound);
}

TEST_F(EtcdLive, SiteStoreRegistersNodesAndFencesAssignments) {
  EtcdClient& c = *client_;
  const std::string site = "hall-a";
  auto agent_lease = c.lease_grant(30);
  ASSERT_TRUE(agent_lease.ok());
  NodeRecord n;
  n.gpus = 8;
  n.nameplate_w = 5600;
  n.min_w = 1600;
  n.draw_w = 4000;
  n.cap_w = 5600;
  n.time_unix_s = 1;
  n.jobs = {{"j1", 8, 4000, 0.5, 0.3, 0}};
  for (const char* name : {"n1", "n2"}) {
    n.node = name;
    ASSERT_TRUE(register_node(c, site, n, agent_lease->id).ok());
  }
  ASSERT_TRUE(c.put(node_key(site, "bad"), R"({"node":"bad"})").ok());
  EXPECT_EQ(register_node(c, site, n, 0).code(), StatusCode::kInvalidArgument);
  auto nodes = list_nodes(c, site);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  EXPECT_EQ(nodes->nodes.size(), 2u);
  EXPECT_EQ(nodes->nodes.at("n2").gpus, 8);
  ASSERT_EQ(nodes->rejected.size(), 1u);
  EXPECT_NE(nodes->rejected[0].message().find("/flexwatt/hall-a/nodes/bad: gpus: missing"),
            std::string::npos)
      << nodes->rejected[0].message();
  EXPECT_GT(nodes->revision, 0);

  auto coord_lease = c.lease_grant(30);
  auto leader = c.campaign(election_name(site), coord_lease->id, "http://127.0.0.1:1", 5);
  ASSERT_TRUE(leader.ok()) << leader.status().message();
  std::map<std::string, Assignment> plan;
  for (int i = 0; i < 130; ++i)
    plan["n" + std::to_string(i)] = {700.0 + i, leader->rev, 1e9, "join"};
  auto w = write_assignments(c, site, *leader, plan);  // two fenced batches (128 + 2)
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_TRUE(*w);
  auto all = list_assignments(c, site);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->assignments.size(), 130u);
  auto a7 = read_assignment(c, site, "n7");
  ASSERT_TRUE(a7.ok());
  EXPECT_EQ(a7->watts, 707.0);
  EXPECT_EQ(a7->revision, leader->rev);
  EXPECT_EQ(read_assignment(c, site, "n999").status().code(), StatusCode::kNotFound);

  // A coordinator that lost its leadership writes nothing.
  ASSERT_TRUE(c.resign(*leader).ok());
  auto stale = write_assignments(c, site, *leader, {{"n1", {1.0, leader->rev, 1e9, ""}}});
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(*stale);
  EXPECT_EQ(read_assignment(c, site, "n1")->watts, 701.0);

  // The agents' lease goes: their registrations vanish, their assignments stay reserved.
  ASSERT_TRUE(c.lease_revoke(agent_lease->id).ok());
  EXPECT_TRUE(list_nodes(c, site)->nodes.empty());
  EXPECT_EQ(list_assignments(c, site)->assignments.size(), 130u);

  EXPECT_EQ(read_budget(c, site).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(write_budget(c, site, {51200, 30, "operator", 1}).ok());
  EXPECT_EQ(read_budget(c, site)->watts, 51200);
  GridTarget g;
  g.value_w = 35840;
  g.start_unix_s = 10;
  g.correlation_id = "evt-1";
  ASSERT_TRUE(write_grid_target(c, site, g).ok());
  EXPECT_EQ(*read_grid_target(c, site)->value_w, 35840);
  EXPECT_EQ(read_budget(c, site)->watts, 51200);  // the grid key does not shadow the budget
}

TEST_F(EtcdLive, DeadEndpointFailsOver) {
  const int dead = testing::free_ports(1)[0];
  EtcdClient c = make_client({"127.0.0.1:" + std::to_string(dead), cluster_->endpoint(0)});
  auto p = c.put("/fo", "1");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(c.preferred_endpoint(), 1u);  // later calls start on the member that answered
  EXPECT_EQ(c.get("/fo")->kvs.at(0).value, "1");
}

TEST(EtcdCluster3, KillOneMemberClientAndWatchContinue) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cl = EtcdCluster::Start(3);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EtcdCluster& cluster = **cl;
  EtcdClient c = make_client(cluster.endpoints(), 8);
  ASSERT_TRUE(c.put("/f/0", "0").ok());
  ASSERT_EQ(c.preferred_endpoint(), 0u);

  std::mutex mu;
  std::vector<std::string> values;
  WatchOptions o;
  o.key = "/f/";
  o.range_end = prefix_end("/f/");
  auto w = EtcdWatch::Start(&c, o, [&](const std::vector<WatchEvent>& ev) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& e : ev) values.push_back(e.kv.value);
  });
  ASSERT_TRUE(w->wait_created(5));
  ASSERT_TRUE(c.put("/f/1", "1").ok());
  ASSERT_TRUE(eventually(5, [&] {
    std::lock_guard<std::mutex> lock(mu);
    return values.size() == 1;
  }));

  cluster.kill_member(0);  // the member both the client and the watch use
  for (int i = 2; i < 6; ++i) {
    auto p = c.put("/f/" + std::to_string(i), std::to_string(i));
    ASSERT_TRUE(p.ok()) << p.status().message();
  }
  EXPECT_NE(c.preferred_endpoint(), 0u);
  auto r = c.get_prefix("/f/");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kvs.size(), 6u);
  // The watch reconnected to another member from its last revision: nothing lost or repeated.
  ASSERT_TRUE(eventually(10, [&] {
    std::lock_guard<std::mutex> lock(mu);
    return values.size() >= 5;
  }));
  w->cancel();
  EXPECT_EQ(values, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  EXPECT_GE(w->reconnects(), 1);
}

TEST(EtcdCluster3, WatchLeavesAMemberThatLostQuorum) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cl = EtcdCluster::Start(3);
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EtcdCluster& cluster = **cl;
  EtcdClient c = make_client(cluster.endpoints());
  WatchOptions o;
  o.key = "/q";
  auto w = EtcdWatch::Start(&c, o, {});
  ASSERT_TRUE(w->wait_created(5));
  ASSERT_EQ(w->reconnects(), 0);
  cluster.kill_member(1);
  cluster.kill_member(2);
  // Member 0 has no leader now; with "hasleader" it cancels the stream (after a few election
  // timeouts) rather than keeping a watch that can never see a write.
  EXPECT_TRUE(eventually(10, [&] { return w->reconnects() >= 1; }));
}

}  // namespace
}  // namespace fw::fleet

// The agent's `fleet:` block: config parsing, the node record it reports, and (with a real
// etcd; without one it skips, or fails under CI=true) an agent that takes its budget from its
// assignment.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>

#include "../fleet/etcd_harness.hpp"
#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "agent/agent_config.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/node_agent.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/keys.hpp"

namespace fw::agent {
namespace {

TEST(FleetAgentConfig, ParsesTheBlockAndNamesBadFields) {
  auto c = parse_agent_config(
      "fleet:\n  etcd: [http://127.0.0.1:2379]\n  site: s1\n  node: n7\n  safe_share_w: 900\n",
      "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->fleet.enabled());
  EXPECT_EQ(c->fleet.site, "s1");
  EXPECT_EQ(c->fleet.node, "n7");
  EXPECT_DOUBLE_EQ(c->fleet.safe_share_w, 900);
  EXPECT_DOUBLE_EQ(c->fleet.lease_ttl_s, 5);
  auto none = parse_agent_config("period_s: 0.5\n", "a.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->fleet.enabled());
  auto no_share =
      parse_agent_config("fleet:\n  etcd: [http://127.0.0.1:2379]\n  site: s\n", "a.yaml");
  ASSERT_FALSE(no_share.ok());
  EXPECT_NE(no_share.status().message().find("safe_share_w"), std::string::npos);
  auto no_site =
      parse_agent_config("fleet:\n  etcd: [http://127.0.0.1:2379]\n  safe_share_w: 9\n", "a.yaml");
  ASSERT_FALSE(no_site.ok());
  EXPECT_NE(no_site.status().message().find("site"), std::string::npos);
  auto no_etcd = parse_agent_config("fleet:\n  site: s\n  safe_share_w: 9\n", "a.yaml");
  ASSERT_FALSE(no_etcd.ok());
  EXPECT_NE(no_etcd.status().message().find("etcd"), std::string::npos);
  auto unknown = parse_agent_config(
      "fleet:\n  etcd: [http://127.0.0.1:2379]\n  site: s\n  safe_share_w: 9\n  nod: x\n",
      "a.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("nod"), std::string::npos);
}

TEST(FleetAgentConfig, RecordSumsGpusAndJobs) {
  PlantInfo info;
  info.gpus.resize(3);
  for (auto& g : info.gpus) {
    g.min_cap_w = 100;
    g.max_cap_w = 400;
  }
  JobInfo j;
  j.name = "train";
  j.gpus = {0, 2};
  info.jobs.push_back(j);
  Snapshot s;
  s.gpus.resize(3);
  s.gpus[0].power_w = 300;
  s.gpus[0].cap_w = 350;
  s.gpus[2].power_w = 200;  // gpu 1: no reading
  const fleet::NodeRecord r = fleet_record("n1", info, s, 42);
  EXPECT_EQ(r.node, "n1");
  EXPECT_EQ(r.gpus, 3);
  EXPECT_DOUBLE_EQ(r.nameplate_w, 1200);
  EXPECT_DOUBLE_EQ(r.min_w, 300);
  EXPECT_DOUBLE_EQ(r.draw_w, 500);
  EXPECT_DOUBLE_EQ(r.cap_w, 350);
  EXPECT_DOUBLE_EQ(r.time_unix_s, 42);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_EQ(r.jobs[0].id, "train");
  EXPECT_EQ(r.jobs[0].gpus, 2);
  EXPECT_DOUBLE_EQ(r.jobs[0].draw_w, 500);
}

class StepClock : public Clock {
 public:
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override {
    if (t_s > now_) now_ = t_s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // lets the link's thread run
  }

 private:
  double now_ = 0;
};

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

TEST(FleetAgentLive, RegistersAndTakesTheAssignedBudget) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  AgentConfig cfg;
  cfg.plant.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
  cfg.period_s = 0.1;
  cfg.duration_s = 0;  // until the stop below
  cfg.restore_file = dir + "/saved.json";
  cfg.lock_file = dir + "/agent.lock";
  cfg.server.unix_socket_path = dir + "/agent.sock";
  cfg.server.tcp_port = -1;
  cfg.fleet.etcd = (*cluster)->endpoints();
  cfg.fleet.site = "s1";
  cfg.fleet.node = "n1";
  cfg.fleet.safe_share_w = 250;
  cfg.fleet.lease_ttl_s = 2;
  cfg.job_silent_after_s = 0;  // the test's job never reports
  fleet::EtcdClientOptions eo;
  eo.endpoints = cfg.fleet.etcd;
  auto etcd = fleet::EtcdClient::Create(eo);
  ASSERT_TRUE(etcd.ok());
  fleet::Assignment asg;
  asg.watts = 310;
  asg.revision = 7;
  asg.expires_unix_s = unix_now() + 120;
  ASSERT_TRUE(etcd->put(fleet::assign_key("s1", "n1"), fleet::encode(asg)).ok());
  {
    NodeAgent a(cfg);
    ASSERT_TRUE(a.start().ok());
    EXPECT_DOUBLE_EQ(a.hub().latest()->state.budget.watts, 250);  // the safe share at first
    // A job registered with its PFI: the node's registration must carry it to the coordinator.
    JobInfo info;
    info.name = "grpo";
    ASSERT_EQ(a.jobs().add("j1", info), JobRegistry::Outcome::kOk);
    ASSERT_EQ(a.jobs().set_pfi("j1", 1.7, "registration"), JobRegistry::Outcome::kOk);
    // On sim, channel job j mirrors simulated job j: the record names the scenario's job.
    auto registered_pfi = [&]() -> double {  // the PFI of the node's one job in etcd; 0 before
      auto got = etcd->get(fleet::node_key("s1", "n1"));
      if (!got.ok() || got->kvs.size() != 1) return 0;
      auto rec = fleet::decode_node(got->kvs[0].value, "node");
      return rec.ok() && rec->jobs.size() == 1 ? rec->jobs[0].pfi : 0;
    };
    StepClock clock;
    const double t0 = unix_now();  // the link runs on real time: wait for it, up to 20 s
    a.run(clock, [&] {
      return (a.hub().latest()->state.budget.watts == 310 && registered_pfi() > 0) ||
             unix_now() - t0 > 20;
    });
    auto p = a.hub().latest();
    EXPECT_DOUBLE_EQ(p->state.budget.watts, 310);
    EXPECT_EQ(p->state.budget.source, "coordinator");
    EXPECT_DOUBLE_EQ(registered_pfi(), 1.7);
    auto got = etcd->get(fleet::node_key("s1", "n1"));
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->kvs.size(), 1u);
    auto rec = fleet::decode_node(got->kvs[0].value, "node");
    ASSERT_TRUE(rec.ok()) << rec.status().message();
    EXPECT_EQ(rec->gpus, 1);
    EXPECT_GT(rec->nameplate_w, 0);
    EXPECT_TRUE(a.shutdown().ok());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fw::agent

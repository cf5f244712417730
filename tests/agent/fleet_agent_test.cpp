// The agent's `fleet:` block: config parsing, the node record it reports, and (with a real
// etcd; without one it skips, or fails under CI=true) an agent that takes its budget from its
// assignment.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../fleet/etcd_harness.hpp"
#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "agent/agent_config.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/node_agent.hpp"
#include "fleet/etcd_client.hpp"
#include "fleet/keys.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

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

// The fleet block takes the coordinator's etcd security keys (fleet/etcd_security_config.hpp);
// errors name the file, line and the field under fleet.
TEST(FleetAgentConfig, ReadsEtcdTlsAndAuthKeysAndNamesTheirErrors) {
  char tmpl[] = "/tmp/flexwatt-agentcfg-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string d = tmpl;
  for (const char* f : {"ca.pem", "pw"}) std::ofstream(d + "/" + f) << "pw-line\n";
  ::chmod((d + "/pw").c_str(), 0600);
  const std::string head =
      "fleet:\n  etcd: [https://10.0.0.1:2379]\n  site: s1\n  safe_share_w: 900\n";
  auto c = parse_agent_config(head + "  etcd_tls:\n    ca_file: " + d +
                                  "/ca.pem\n  etcd_auth:\n    user: n7\n    password_file: " + d +
                                  "/pw\n",
                              "a.yaml");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->fleet.etcd_security.ca_file, d + "/ca.pem");
  EXPECT_EQ(c->fleet.etcd_security.user, "n7");
  EXPECT_EQ(c->fleet.etcd_security.password, "pw-line");
  ::chmod((d + "/pw").c_str(), 0640);
  auto open_pw = parse_agent_config(
      head + "  etcd_auth:\n    user: n7\n    password_file: " + d + "/pw\n", "a.yaml");
  ASSERT_FALSE(open_pw.ok());
  EXPECT_NE(open_pw.status().message().find("a.yaml:7: fleet.etcd_auth.password_file: "),
            std::string::npos)
      << open_pw.status().message();
  EXPECT_NE(open_pw.status().message().find("chmod 600"), std::string::npos);
  auto plain = parse_agent_config(
      "fleet:\n  etcd: [http://10.0.0.1:2379]\n  site: s1\n  safe_share_w: 900\n"
      "  etcd_tls:\n    ca_file: " +
          d + "/ca.pem\n",
      "a.yaml");
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.status().message().find("fleet.etcd_tls: needs https://"), std::string::npos)
      << plain.status().message();
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
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

// Leads the site's election as a coordinator would (a lease and a campaign): the leader key's
// create revision is the fencing token agents accept assignments by.
int64_t lead_site(fleet::EtcdClient& etcd, const std::string& site) {
  auto lease = etcd.lease_grant(60);
  if (!lease.ok()) return 0;
  auto won = etcd.campaign(fleet::election_name(site), lease->id, "test", 5);
  return won.ok() ? won->rev : 0;
}

// Writes an assignment of `watts` to node n1 of site s1 as the site's leader (it leads the
// election first; the assignment expires in 120 s).
void assign_as_leader(fleet::EtcdClient& etcd, double watts) {
  fleet::Assignment asg;
  asg.watts = watts;
  asg.revision = lead_site(etcd, "s1");
  ASSERT_GT(asg.revision, 0);
  asg.expires_unix_s = unix_now() + 120;
  ASSERT_TRUE(etcd.put(fleet::assign_key("s1", "n1"), fleet::encode(asg)).ok());
}

AgentConfig live_config(const fleet::testing::EtcdCluster& cluster, const std::string& dir) {
  AgentConfig cfg;
  cfg.plant.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
  cfg.period_s = 0.1;
  cfg.duration_s = 0;  // until the stop below
  cfg.restore_file = dir + "/saved.json";
  cfg.lock_file = dir + "/agent.lock";
  cfg.server.unix_socket_path = dir + "/agent.sock";
  cfg.server.tcp_port = -1;
  cfg.fleet.etcd = cluster.endpoints();
  cfg.fleet.site = "s1";
  cfg.fleet.node = "n1";
  cfg.fleet.safe_share_w = 250;
  cfg.fleet.lease_ttl_s = 2;
  cfg.job_silent_after_s = 0;  // the test's job never reports
  return cfg;
}

// A client of the agent's etcd endpoints (the test's view of the site's keys).
Result<fleet::EtcdClient> client_of(const AgentConfig& cfg) {
  fleet::EtcdClientOptions eo;
  eo.endpoints = cfg.fleet.etcd;
  return fleet::EtcdClient::Create(eo);
}

// A 0 W assignment (a 0 W grid target split by the coordinator) drives every GPU of the node
// to its floor, its minimum cap: the agent must not skip budgets <= 0.
TEST(FleetAgentLive, ZeroWattAssignmentDrivesTheNodeToItsFloor) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const AgentConfig cfg = live_config(**cluster, dir);
  auto etcd = client_of(cfg);
  ASSERT_TRUE(etcd.ok());
  ASSERT_NO_FATAL_FAILURE(assign_as_leader(*etcd, 0));
  {
    NodeAgent a(cfg);
    ASSERT_TRUE(a.start().ok());
    auto at_floor = [&] {
      auto p = a.hub().latest();
      if (!p || p->state.gpus.empty()) return false;
      double floor_w = 0;
      for (const auto& g : p->state.gpus) {
        floor_w += g.cap_min_w;
        if (!(g.cap_w <= g.cap_min_w + 1e-6)) return false;
      }
      return std::abs(p->state.budget.watts - floor_w) < 1e-6;
    };
    StepClock clock;
    const double t0 = unix_now();
    a.run(clock, [&] { return at_floor() || unix_now() - t0 > 15; });
    auto p = a.hub().latest();
    ASSERT_FALSE(p->state.gpus.empty());
    EXPECT_TRUE(at_floor()) << "budget " << p->state.budget.watts << " W, cap "
                            << p->state.gpus[0].cap_w << " W, floor " << p->state.gpus[0].cap_min_w
                            << " W";
    EXPECT_EQ(p->state.budget.source, "coordinator");
    EXPECT_TRUE(a.shutdown().ok());
  }
  std::filesystem::remove_all(dir);
}

// A controller that holds caps at the nameplate (static 400 W) on a node assigned 200 W: the
// node's caps must not sum above its share (the campaign saw 417 W drawn on a 210 W share).
TEST(FleetAgentLive, CapsNeverSumAboveTheShare) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  AgentConfig cfg = live_config(**cluster, dir);
  cfg.controller = "static:knob=cap,value=400,period_s=0.1";
  auto etcd = client_of(cfg);
  ASSERT_TRUE(etcd.ok());
  ASSERT_NO_FATAL_FAILURE(assign_as_leader(*etcd, 200));
  {
    NodeAgent a(cfg);
    ASSERT_TRUE(a.start().ok());
    StepClock clock;
    const double t0 = unix_now();
    double worst_caps_w = 0;
    int ticks_on_share = 0;
    a.run(clock, [&] {
      auto p = a.hub().latest();
      if (p && p->state.budget.source == "coordinator") {
        double caps = 0;
        for (const auto& g : p->state.gpus) caps += std::isnan(g.cap_w) ? 0 : g.cap_w;
        // After the first second on the share: the caps found at start (400 W) read until the
        // simulated GPU applies the first write (0.4 s measured).
        if (++ticks_on_share > 10) worst_caps_w = std::max(worst_caps_w, caps);
      }
      return ticks_on_share > 50 || unix_now() - t0 > 20;
    });
    EXPECT_GT(ticks_on_share, 50);
    EXPECT_LE(worst_caps_w, 200 + 1e-6);
    EXPECT_DOUBLE_EQ(a.hub().latest()->state.budget.watts, 200);
    EXPECT_TRUE(a.shutdown().ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(FleetAgentLive, RegistersAndTakesTheAssignedBudget) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const AgentConfig cfg = live_config(**cluster, dir);
  auto etcd = client_of(cfg);
  ASSERT_TRUE(etcd.ok());
  ASSERT_NO_FATAL_FAILURE(assign_as_leader(*etcd, 310));
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

// A node publishes a draw curve for the coordinator's site loop (issue 28): the job's sweep
// when configured (fleet.draw_curve, per GPU), else the curve it measures.
TEST(FleetAgentLive, PublishesTheConfiguredDrawCurveOnTheSimBackend) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  AgentConfig cfg = live_config(**cluster, dir);
  cfg.fleet.draw_curve = {{100, 99.9}, {250, 244.1}, {400, 345.6}};
  auto etcd = client_of(cfg);
  ASSERT_TRUE(etcd.ok());
  ASSERT_NO_FATAL_FAILURE(assign_as_leader(*etcd, 310));
  {
    NodeAgent a(cfg);
    ASSERT_TRUE(a.start().ok());
    auto curve = [&]() -> std::vector<std::pair<double, double>> {
      auto got = etcd->get(fleet::node_key("s1", "n1"));
      if (!got.ok() || got->kvs.size() != 1) return {};
      auto rec = fleet::decode_node(got->kvs[0].value, "node");
      return rec.ok() ? rec->draw_curve : std::vector<std::pair<double, double>>{};
    };
    StepClock clock;
    const double t0 = unix_now();
    a.run(clock, [&] { return !curve().empty() || unix_now() - t0 > 20; });
    const auto c = curve();
    ASSERT_EQ(c.size(), 3u);  // one GPU in grpo-7b-a100: the sweep as configured
    EXPECT_DOUBLE_EQ(c[1].first, 250);
    EXPECT_DOUBLE_EQ(c[1].second, 244.1);
    EXPECT_TRUE(a.shutdown().ok());
  }
  std::filesystem::remove_all(dir);
}

TEST(FleetAgentConfig, MeasuredDrawCurveBinsTheBudgetInForce) {
  MeasuredDrawCurve m(800, 3200, 5);
  EXPECT_TRUE(m.curve().empty());
  for (int k = 0; k < 10; ++k) m.add(3200, 2900);  // uncapped only: one point, no curve
  EXPECT_TRUE(m.curve().empty());
  for (int k = 0; k < 4; ++k) m.add(1600, 1500);  // under min_samples
  EXPECT_TRUE(m.curve().empty());
  m.add(1610, 1510);
  const auto c = m.curve();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_NEAR(c[0].first, 1602, 1e-9);
  EXPECT_NEAR(c[0].second, 1502, 1e-9);
  EXPECT_DOUBLE_EQ(c[1].first, 3200);
  EXPECT_DOUBLE_EQ(c[1].second, 2900);
  // The configured sweep, scaled by the node's GPUs; the config names its errors.
  EXPECT_EQ(node_draw_curve({{100, 99}, {400, 345}}, 8),
            (std::vector<std::pair<double, double>>{{800, 792}, {3200, 2760}}));
  const std::string base =
      "fleet:\n  etcd: [http://127.0.0.1:2379]\n  site: s1\n  safe_share_w: 900\n";
  auto ok = parse_agent_config(base + "  draw_curve: [[100, 99.9], [400, 345.6]]\n", "a.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->fleet.draw_curve.size(), 2u);
  auto bad = parse_agent_config(base + "  draw_curve: [[400, 345.6], [100, 99.9]]\n", "a.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("caps must increase"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("a.yaml"), std::string::npos);
  bad = parse_agent_config(base + "  draw_curve: [[100, 99.9]]\n", "a.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("2..64"), std::string::npos);
}

TEST(FleetAgentConfig, ShareGuardLowersCapsTowardTheirMinimum) {
  PlantInfo info;
  info.gpus.resize(2);
  for (auto& g : info.gpus) {
    g.min_cap_w = 100;
    g.max_cap_w = 400;
  }
  EXPECT_DOUBLE_EQ(node_floor_w(info), 200);
  Snapshot s;
  s.gpus.resize(2);
  s.gpus[0].cap_w = 400;
  s.gpus[1].cap_w = 200;
  Command c;  // the controller leaves both caps as they are: 600 W in force
  ASSERT_TRUE(clamp_caps_to_share(c, info, s, 400));
  ASSERT_EQ(c.power_cap_w.size(), 2u);
  EXPECT_NEAR(c.power_cap_w[0] + c.power_cap_w[1], 400, 1e-9);
  EXPECT_NEAR(c.power_cap_w[0], 100 + 300 * 0.5, 1e-9);  // same fraction of the headroom
  EXPECT_NEAR(c.power_cap_w[1], 100 + 100 * 0.5, 1e-9);
  Command zero;
  ASSERT_TRUE(clamp_caps_to_share(zero, info, s, 0));  // below the floor: every GPU at minimum
  EXPECT_DOUBLE_EQ(zero.power_cap_w[0], 100);
  EXPECT_DOUBLE_EQ(zero.power_cap_w[1], 100);
  Command within;
  within.power_cap_w = {150, std::nan("")};
  EXPECT_FALSE(clamp_caps_to_share(within, info, s, 400));  // 150 + 200 in force
  EXPECT_DOUBLE_EQ(within.power_cap_w[0], 150);
}

// Following a coordinator without a token file, the agent refuses API writes unless its
// fleet block allows them explicitly (the socket and loopback TCP are all it serves then).
TEST(FleetAgentLive, WithoutTokensWritesAreRefusedUnlessAllowed) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  for (bool allow : {false, true}) {
    char tmpl[] = "/tmp/fw_fleet_agent_XXXXXX";
    const std::string dir = ::mkdtemp(tmpl);
    AgentConfig cfg = live_config(**cluster, dir);
    cfg.fleet.allow_unauthenticated_writes = allow;
    {
      NodeAgent a(cfg);
      ASSERT_TRUE(a.start().ok());
      httplib::Client c(cfg.server.unix_socket_path, 80);
      c.set_address_family(AF_UNIX);
      auto budget = c.Put("/v1/budget", R"({"watts":300})", "application/json");
      ASSERT_TRUE(budget);
      if (allow) {
        EXPECT_EQ(budget->status / 100, 2) << budget->body;
      } else {
        EXPECT_EQ(budget->status, 403) << budget->body;
      }
      auto ctl = c.Put("/v1/controller", R"({"controller":"uncontrolled"})", "application/json");
      ASSERT_TRUE(ctl);
      if (!allow) {
        EXPECT_EQ(ctl->status, 403) << ctl->body;
      }
      auto status = c.Get("/v1/status");
      ASSERT_TRUE(status);
      EXPECT_EQ(status->status, 200);  // reads stay open
      EXPECT_TRUE(a.shutdown().ok());
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace fw::agent

// The coordinator with live agents on the simulator (sim: backend) and a real etcd
// (tests/fleet/etcd_harness.hpp; without etcd it skips, or fails under CI=true): an idle node
// gives the headroom it leaves unused to a node held at its share, under `equal`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../fleet/etcd_harness.hpp"
#include "../require_tool.hpp"  // FW_REQUIRE_TOOL
#include "agent/agent_config.hpp"
#include "agent/node_agent.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/keys.hpp"

namespace fw::agent {
namespace {

// Virtual time at 5x real time: every tick of 0.1 s sleeps 20 ms, so the links (real time)
// and the coordinator run while the simulated GPUs advance.
class FastClock : public Clock {
 public:
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override {
    if (t_s > now_) now_ = t_s;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

 private:
  double now_ = 0;
};

// One simulated A100 (100..400 W) running dense pretraining from `start_s` (virtual s).
std::string pretrain_scenario(const std::string& path, double start_s) {
  std::ofstream(path) << "name: reclaim\nduration_s: 100000\nsim: {dt_s: 0.1, noise_w: 1.0}\n"
                         "gpus:\n  - {model: a100-sxm4-80gb, count: 1}\n"
                         "budget: {watts: 400, scope: job, window_s: 30}\n"
                         "jobs:\n  - name: pretrain\n    kind: pretrain\n"
                         "    workload: mpt-13b-pt\n    gpus: 1\n    start_s: "
                      << start_s << "\n    tp: 1\n    tokens_per_iter: 1048576\n";
  return path;
}

AgentConfig agent_config(const fleet::testing::EtcdCluster& cluster, const std::string& dir,
                         const std::string& node, const std::string& scenario) {
  AgentConfig cfg;
  cfg.plant.backend = "sim:" + scenario;
  cfg.controller = "static:knob=cap,value=400,period_s=0.1";  // caps as high as the share lets
  cfg.period_s = 0.1;
  cfg.duration_s = 0;
  cfg.restore_file = dir + "/" + node + ".saved.json";
  cfg.lock_file = dir + "/" + node + ".lock";
  cfg.server.unix_socket_path = dir + "/" + node + ".sock";
  cfg.server.tcp_port = -1;
  cfg.fleet.etcd = cluster.endpoints();
  cfg.fleet.site = "s1";
  cfg.fleet.node = node;
  cfg.fleet.safe_share_w = 250;
  cfg.fleet.lease_ttl_s = 2;
  cfg.job_silent_after_s = 0;
  return cfg;
}

// Site 600 W over two 400 W nodes: `equal` gives each 250 W (one 100 W floor left for a
// joiner). The busy node draws its 250 W; the idle one about 60 W of it. The idle node's
// unused share must go to the busy one (the campaign saw raises after a cut held back by idle
// nodes), and the assignments never sum above what is split.
TEST(FleetReclaimLive, IdleNodeGivesItsHeadroomToANodeHeldAtItsShare) {
  FW_REQUIRE_TOOL(!fleet::testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = fleet::testing::EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  char tmpl[] = "/tmp/fw_fleet_reclaim_XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  fleet::CoordinatorOptions co;
  co.site = "s1";
  co.id = "a";
  co.lease_ttl_s = 2;
  co.campaign_timeout_s = 0.5;
  co.expiry_s = 3;
  co.refresh_s = 0.5;
  co.default_budget_w = 600;
  co.tick_s = 0.05;
  auto coord = fleet::Coordinator::Start(fleet::testing::fast_client_options(**cluster), co);
  ASSERT_TRUE(coord.ok()) << coord.status().message();
  NodeAgent busy(agent_config(**cluster, dir, "busy", pretrain_scenario(dir + "/busy.yaml", 0)));
  NodeAgent idle(agent_config(**cluster, dir, "idle", pretrain_scenario(dir + "/idle.yaml", 1e8)));
  ASSERT_TRUE(busy.start().ok());
  ASSERT_TRUE(idle.start().ok());
  std::atomic<bool> stop{false};
  auto run = [&](NodeAgent* a) {
    FastClock clock;
    a->run(clock, [&] { return stop.load(); });
  };
  std::thread tb(run, &busy), ti(run, &idle);
  auto watts = [&](NodeAgent& a) {
    auto p = a.hub().latest();
    return p && p->state.budget.source == "coordinator" ? p->state.budget.watts : 0.0;
  };
  double max_sum_w = 0, busy_w = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(12)) {
    busy_w = watts(busy);
    max_sum_w = std::max(max_sum_w, busy_w + watts(idle));
    if (busy_w >= 350) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const double idle_w = watts(idle);
  const double idle_draw_w = idle.hub().latest()->state.gpus[0].power_w;
  stop = true;
  tb.join();
  ti.join();
  EXPECT_GE(busy_w, 350) << "the busy node stayed at " << busy_w << " W; the idle one has "
                         << idle_w << " W and draws " << idle_draw_w << " W";
  EXPECT_LE(max_sum_w, 500 + 1e-6);
  EXPECT_TRUE(busy.shutdown().ok());
  EXPECT_TRUE(idle.shutdown().ok());
  (*coord)->stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fw::agent

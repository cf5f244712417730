// The coordinator's site loop under a grid target, against a real etcd
// (tests/fleet/etcd_harness.hpp) with simulated nodes (fleet_sim/sim_node.hpp: sim::Cluster
// nodes, their links, equal per-GPU caps from the node budget): the site's measured power
// tracks a cut, and the raise after the cut reaches the nodes. Simulated; without etcd it
// skips, or fails under CI=true (require_tool.hpp).

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "../fleet/etcd_harness.hpp"
#include "../require_tool.hpp"
#include "core/format.hpp"
#include "fleet/coordinator.hpp"
#include "fleet/node_link.hpp"
#include "fleet/site_store.hpp"
#include "fleet_sim/fleet_sim.hpp"
#include "fleet_sim/sim_node.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::fleet {
namespace {

using testing::EtcdCluster;

EtcdClientOptions etcd_options(const EtcdCluster& c) { return testing::fast_client_options(c); }

struct Tick {
  double t_s, site_w, free_w, line_w;
};

// Eight simulated 4-GPU pretraining nodes (the node scenario trimmed to 4 GPUs; no duty-cycle
// low phase in the run's seconds) under one coordinator with the site loop; a grid target of
// 75 % of the measured baseline from 4.5 s to 10 s (ramp down 1 s, up 0.5 s); 10 Hz ticks for
// 14 s. Loop gains for a run of seconds: period 0.2 s, ki 0.5/s, judged on 0.5 s means.
TEST(DrLive, SiteTracksACutAndTheRaiseAfterItReachesTheNodes) {
  FW_REQUIRE_TOOL(!testing::etcd_binary().empty(), "etcd (Debian package etcd-server)");
  auto cluster = EtcdCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  auto sc =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml",
                         {"gpus.0.count=4", "jobs.0.gpus=4"});
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  std::vector<std::unique_ptr<SimNode>> nodes;
  std::vector<std::unique_ptr<NodeLink>> links;
  double nameplate = 0;
  for (int i = 0; i < 8; ++i) {
    sim::Scenario s = *sc;
    for (auto& j : s.jobs) {
      j.start_s = 0;
      j.start_offset_s = 0.77 * i;  // the nodes' iterations out of step, as in a site
    }
    nodes.push_back(std::make_unique<SimNode>("n" + std::to_string(i), s, 100 + i));
    nameplate += nodes.back()->nameplate_w();
  }
  const std::string site = "dr";
  EtcdClientOptions eo = etcd_options(**cluster);
  auto admin = EtcdClient::Create(eo);
  ASSERT_TRUE(admin.ok());
  CoordinatorOptions co;
  co.site = site;
  co.id = "a";
  co.lease_ttl_s = 2;
  co.campaign_timeout_s = 0.5;
  co.expiry_s = 4;
  co.refresh_s = 1;
  co.tick_s = 0.05;
  // The nameplates plus one node's floor: the leader keeps a joiner's floor unassigned
  // (split_plan.hpp, "joiner"), so at this budget the release gives every node its nameplate.
  co.default_budget_w = nameplate + nodes.front()->record(unix_now_s()).min_w;
  co.site_loop.enabled = true;
  co.site_loop.period_s = 0.2;
  co.site_loop.ki_per_s = 0.5;
  co.site_loop.judge_s = 0.5;  // seconds-long hold: judged on half-second means
  auto coord = Coordinator::Start(eo, co);
  ASSERT_TRUE(coord.ok()) << coord.status().message();
  for (auto& n : nodes) {
    NodeLinkOptions lo{site, n->name(), nameplate / 8, 2};
    auto l = NodeLink::Start(eo, lo, n->record(unix_now_s()));
    ASSERT_TRUE(l.ok()) << l.status().message();
    links.push_back(std::move(l).value());
  }
  ASSERT_TRUE(testing::eventually(5, [&] {
    for (auto& l : links)
      if (l->budget().source != NodeBudget::Source::kAssignment) return false;
    return true;
  }));
  const double t0 = unix_now_s();
  std::vector<Tick> ticks;
  double max_split = 0;  // the leader's largest split during the hold
  double baseline = 0, target = 0;
  int baseline_n = 0;
  bool sent = false;
  for (int k = 0; k <= 140; ++k) {
    const double t = 0.1 * k;
    const double wait = t0 + t - unix_now_s();
    if (wait > 0) std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    double site_w = 0, free_w = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      ASSERT_TRUE(nodes[i]->step(t, links[i]->budget().watts).ok());
      links[i]->update(nodes[i]->record(unix_now_s()));
      site_w += nodes[i]->power_w();
      free_w += nodes[i]->uncontrolled_w();
    }
    if (t >= 1 && t < 3) {
      baseline += site_w;
      ++baseline_n;
    }
    if (!sent && t >= 3) {
      baseline /= baseline_n;
      target = 0.75 * baseline;
      GridTarget g;
      g.value_w = target;
      g.start_unix_s = t0 + 4.5;
      g.end_unix_s = t0 + 10;
      g.ramp_w_per_s = (nameplate - target) / 1.0;  // up in (nameplate - target) / ramp = 1 s
      g.correlation_id = "cut";
      ASSERT_TRUE((*coord)->put_grid_target(g).ok());
      sent = true;
    }
    ticks.push_back({t, site_w, free_w, 0});
    if (t >= 6 && t < 10) max_split = std::max(max_split, (*coord)->stats().last_split_w);
    if (std::getenv("FW_DR_TRACE") && k % 5 == 0) {
      const CoordinatorStats st = (*coord)->stats();
      std::printf("t %.1f site %.1f free %.1f eff %.1f split %.1f margin %.1f integral %.1f\n", t,
                  site_w, free_w, st.last_plan.effective_w, st.last_split_w, st.site_loop_margin_w,
                  st.site_loop_integral_w);
    }
  }
  std::vector<DrTraceRow> rows;
  for (const Tick& x : ticks) rows.push_back({x.t_s, x.site_w, x.free_w, target});
  // The hold from 6 s (the first 1.5 s are the nodes' lag behind the ramp and the loop's rise),
  // the ramp from 3.5 s.
  const nlohmann::json s = dr_scores(rows, baseline, 6, 10, 3.5, 14);
  double hold = 0, free_hold = 0, after = 0, free_after = 0;
  int nh = 0, na = 0;
  for (const Tick& x : ticks) {
    if (x.t_s >= 6 && x.t_s < 10) hold += x.site_w, free_hold += x.free_w, ++nh;
    if (x.t_s >= 13) after += x.site_w, free_after += x.free_w, ++na;
  }
  hold /= nh;
  free_hold /= nh;
  after /= na;
  free_after /= na;
  std::printf(
      "[dr-live] simulated: baseline %.1f W target %.1f W hold mean %.1f W (%.2f %% of "
      "baseline from the target; uncapped %.1f W); after release %.1f W of uncapped "
      "%.1f W; mean over-cut %.2f %%; %s\n",
      baseline, target, hold, 100 * (hold - target) / baseline, free_hold, after, free_after,
      100 * s["mean_overcut_frac"].get<double>(), s.dump().c_str());
  // Tracks the cut: not above the target by more than 1 % of the baseline, and not under it by
  // more than 3 % (the field demonstration sat 6.5-9.5 % under). The over-cut target
  // (2 %, on an event's hold) is measured by fleet-sim --scenario dr (docs/fleet.md); a 4 s
  // hold of 32 GPUs holds their iterations' low sub-phases, which no cap fills.
  EXPECT_LE(hold, target + 0.01 * baseline);
  EXPECT_GE(hold, target - 0.03 * baseline);
  EXPECT_GT(max_split, target + 1) << "the site loop never handed unused watts back";
  EXPECT_EQ(s["windows_10s_above_fraction"].get<double>(), 0.0);
  // The raise reached the nodes: every node's budget back at its nameplate (GPUs uncapped) and,
  // 3 s after the release (the simulated clocks rise with a lag of 1.5 s), the site within 5 %
  // of what it would draw uncapped.
  for (size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_GE(links[i]->budget().watts, nodes[i]->nameplate_w() - 1e-6) << nodes[i]->name();
    EXPECT_NEAR(nodes[i]->cap_w(), nodes[i]->nameplate_w(), 1e-6) << nodes[i]->name();
  }
  EXPECT_GE(after, 0.95 * free_after);
  for (auto& l : links) l->leave(true);
  (*coord)->stop(true);
}

}  // namespace
}  // namespace fw::fleet

// fleet-sim's nodes on the replay's plant (fleet_sim/curve_node.hpp, `fleet-sim --node-plant
// replay`): one node is the replay's plant run for that node, tick for tick; the agent's tick
// drives it as it drives a simulated cluster.

#include "fleet_sim/curve_node.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "fleet_sim/agent_node.hpp"
#include "fleet_sim/sim_node.hpp"
#include "studies/dr_event.hpp"
#include "studies/dr_plant.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::fleet {
namespace {

studies::DrEvent aps() {
  auto ev = studies::load_dr_event(std::string(FLEXWATT_SOURCE_DIR) +
                                   "/scenarios/dr/aps-2025-05-01.yaml");
  EXPECT_TRUE(ev.ok()) << ev.status().message();
  return *ev;
}

int job_named(const studies::DrEvent& ev, const std::string& name) {
  for (size_t j = 0; j < ev.jobs.size(); ++j) {
    if (ev.jobs[j].name == name) return int(j);
  }
  ADD_FAILURE() << "no job " << name;
  return 0;
}

// A node of a one-node job is the replay's plant for that job, to the last bit: the same
// draw, dips and throughput under the same caps and pauses at the same times (the replay's
// event made of that job alone, 8 GPUs, sampled at fleet-sim's tick, the node's seed).
TEST(CurveNode, IsTheReplaysPlantForItsJob) {
  const studies::DrEvent site = aps();
  const int j = job_named(site, "pt_mpt_13b_sm");  // pausable, dips hourly
  studies::DrEvent one;
  one.sample_period_s = 0.25;
  one.gpus_per_node = 8;
  one.seed = 4242;
  one.jobs = {site.jobs[size_t(j)]};
  one.jobs[0].gpus = 8;
  studies::DrReplayPlant replay(one);
  CurveGpus node(site, j, 8, 1, 0.25, 4242);
  const double offset = 2000;  // the job's first dip at 2220 s of the run
  node.set_run_offset(offset);
  double tokens = 0;
  for (int k = 1; k <= 4 * 600; ++k) {
    const double t = 0.25 * k;
    const double cap = t < 100 ? 400 : 250;
    const bool pause = t >= 300 && t < 360;
    studies::DrCommand c{{cap}, {pause}};
    replay.write(c, offset + t - 0.25);
    replay.step(offset + t);
    node.advance(t, cap, pause);
    ASSERT_DOUBLE_EQ(node.power_w(), replay.read().node_power_w[0]) << "t " << t;
    tokens += replay.read().job_t_rel[0] * 0.25 * 8;
    ASSERT_DOUBLE_EQ(node.tokens(), tokens) << "t " << t;
  }
  EXPECT_GT(node.tokens_free(), node.tokens());
}

// Nodes of one job are independent; their noise is scaled so that the job's 1-minute mean
// has the job's noise_frac_1min (the replay's rule); the uncapped twin shares the node's noise.
TEST(CurveNode, AJobsNodesTogetherHaveTheJobsOneMinuteNoise) {
  studies::DrEvent site = aps();
  const int j = job_named(site, "infer_llama_8b-kxymm0ql");  // no dips
  const int nodes = 6;
  std::vector<CurveGpus> n;
  for (int i = 0; i < nodes; ++i) n.emplace_back(site, j, 8, nodes, 0.25, 100 + i);
  std::vector<double> minute;
  double acc = 0, level = 0;
  for (int k = 1; k <= 4 * 60 * 240; ++k) {
    double s = 0;
    for (auto& g : n) {
      g.advance(0.25 * k, 1e9, false);
      s += g.power_w();
      EXPECT_DOUBLE_EQ(g.power_w(), g.uncontrolled_w());
    }
    acc += s;
    if (k % 240 == 0) {
      minute.push_back(acc / 240);
      acc = 0;
    }
  }
  for (double m : minute) level += m / minute.size();
  double var = 0;
  for (double m : minute) var += (m - level) * (m - level) / (minute.size() - 1);
  const double frac = std::sqrt(var) / level;
  const double want = site.jobs[size_t(j)].noise_frac_1min;
  // 240 one-minute means: the sd's own sampling error is about 1/sqrt(2 * 239) = 4.6 %.
  EXPECT_NEAR(frac, want, 0.2 * want) << "measured " << frac << ", the job's " << want;
  EXPECT_NEAR(level, nodes * 8 * studies::dr_power_at(site.jobs[size_t(j)], 1e9), 0.01 * level);
}

// The agent's tick runs a curve node as it runs a simulated cluster: the default pid finds no
// knob and puts the node budget in force as equal caps; the node draws its curve's power at
// that cap; a pause relayed by the agent stops its progress at 0 W and its record says so.
TEST(CurveNode, TheAgentsTickDrivesIt) {
  const studies::DrEvent site = aps();
  const int j = job_named(site, "pt_mpt_13b_sm");
  SimNode node("n", CurveGpus(site, j, 8, 1, 0.25, 7), 7);
  ASSERT_TRUE(node.on_curve());
  EXPECT_EQ(node.gpus(), 8);
  agent::AgentConfig cfg;
  cfg.period_s = 0.25;
  NodeBudget b;
  b.source = NodeBudget::Source::kAssignment;
  b.watts = 0.7 * node.nameplate_w();
  auto a = AgentNode::start(node, cfg, b);
  ASSERT_TRUE(a.ok()) << a.status().message();
  double draw = 0;
  int64_t k = 0;
  for (; k * 0.25 < 120; ++k) {
    ASSERT_TRUE((*a)->step(k * 0.25, b).ok());
    if (k * 0.25 >= 60) draw += node.power_w() / 240;
  }
  EXPECT_EQ((*a)->tick().fallback(), agent::FallbackReason::kNoActuator);
  for (double c : node.caps_w()) EXPECT_NEAR(c, b.watts / 8, 1e-6);
  const double want = 8 * studies::dr_power_at(site.jobs[size_t(j)], b.watts / 8);
  EXPECT_NEAR(draw, want, 0.05 * want);
  EXPECT_NEAR(node.tokens() / node.tokens_uncontrolled(),
              studies::dr_t_rel_at(site.jobs[size_t(j)], b.watts / 8), 0.01);
  const double tokens = node.tokens();
  b.pause = true;
  for (int i = 0; i < 20; ++i, ++k) ASSERT_TRUE((*a)->step(k * 0.25, b).ok());
  EXPECT_TRUE(node.paused());
  EXPECT_DOUBLE_EQ(node.tokens(), tokens);
  EXPECT_LT(node.power_w(), 0.01 * want);
  EXPECT_EQ(node.record(0).paused_draw_w, 0);
  EXPECT_EQ(node.snapshot().gpus.size(), 8u);
}

}  // namespace
}  // namespace fw::fleet

// fleet-sim's nodes run the node agent's tick (fleet_sim/agent_node.hpp): its controller, its
// share guard and its limiter decide the simulated node's caps from the coordinator's budget.

#include "fleet_sim/agent_node.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "sim/scenario.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::fleet {
namespace {

sim::Scenario node_scenario() {
  auto sc = sim::load_scenario(
      std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml", {});
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  sim::Scenario s = *sc;
  for (auto& j : s.jobs) j.start_s = 0;
  return s;
}

NodeBudget assignment(double w, bool pause = false) {
  NodeBudget b;
  b.watts = w;
  b.source = NodeBudget::Source::kAssignment;
  b.pause = pause;
  return b;
}

double sum(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); }

// A cut passes at once (the share guard: the caps in force never sum above the node's
// budget, every tick after it); a raise is paced by the limiter (max_cap_change_w per GPU per
// write); the controller (pid on the caps) acts, no fallback.
TEST(AgentNode, TheShareGuardCutsAtOnceAndTheLimiterPacesRaises) {
  SimNode node("n", node_scenario(), 7);
  agent::AgentConfig cfg;
  cfg.period_s = 0.25;
  cfg.controller = "pid:knob=caps";
  cfg.limiter.max_cap_change_w = 5;
  const double top = node.nameplate_w(), cut = 0.6 * top;
  auto a = AgentNode::start(node, cfg, assignment(top));
  ASSERT_TRUE(a.ok()) << a.status().message();
  AgentNode& agent = **a;
  EXPECT_EQ(agent.tick().controller_spec(), "pid:knob=caps");
  int64_t k = 0;
  for (; k * 0.25 < 60; ++k) ASSERT_TRUE(agent.step(k * 0.25, assignment(top)).ok());
  const int64_t changes = agent.budget_changes();  // the first: source config -> coordinator
  for (; k * 0.25 < 120; ++k) {
    ASSERT_TRUE(agent.step(k * 0.25, assignment(cut)).ok());
    EXPECT_LE(sum(node.caps_w()), cut + 1e-6) << "t " << k * 0.25;
  }
  EXPECT_EQ(agent.budget_changes(), changes + 1);
  EXPECT_LE(node.power_w(), cut * 1.02);
  std::vector<double> before = node.caps_w();
  for (int i = 0; i < 40; ++k, ++i) {
    ASSERT_TRUE(agent.step(k * 0.25, assignment(top)).ok());
    const std::vector<double>& now = node.caps_w();
    for (size_t g = 0; g < now.size(); ++g) EXPECT_LE(now[g] - before[g], 5 + 1e-6) << g;
    before = now;
  }
  EXPECT_EQ(agent.budget_changes(), changes + 2);
  EXPECT_EQ(agent.tick().fallback(), agent::FallbackReason::kNone) << agent.last_log();
  EXPECT_GT(agent.tick().limiter_actions_total().at("slew_limited"), 0);
}

// The agent's default controller (pid, knob auto) has nothing to act on where no job exposes
// a knob (no job channel): the agent's fail-safe puts the node budget in force as equal caps,
// as `flexwatt agent` does on such a node.
TEST(AgentNode, TheDefaultPidOnAKnoblessNodeFallsBackToTheEqualSplit) {
  SimNode node("n", node_scenario(), 7);
  agent::AgentConfig cfg;
  cfg.period_s = 0.25;
  const double b = 0.7 * node.nameplate_w();
  auto a = AgentNode::start(node, cfg, assignment(b));
  ASSERT_TRUE(a.ok()) << a.status().message();
  for (int64_t k = 0; k < 40; ++k) ASSERT_TRUE((*a)->step(k * 0.25, assignment(b)).ok());
  EXPECT_EQ((*a)->tick().fallback(), agent::FallbackReason::kNoActuator);
  for (double c : node.caps_w()) EXPECT_NEAR(c, b / node.gpus(), 1e-6);
}

// An assignment that pauses reaches the node's job through the agent (AgentTick::paused(), what
// a real node's registered jobs hear): the node draws its idle GPUs' power and the job makes no
// progress; the agent's reads follow the node's time; the next assignment resumes it.
TEST(AgentNode, APausedJobStandsStillUnderTheAgent) {
  SimNode node("n", node_scenario(), 7);
  agent::AgentConfig cfg;
  cfg.period_s = 0.25;
  auto a = AgentNode::start(node, cfg, assignment(node.nameplate_w()));
  ASSERT_TRUE(a.ok()) << a.status().message();
  int64_t k = 0;
  for (; k * 0.25 < 20; ++k) {
    ASSERT_TRUE((*a)->step(k * 0.25, assignment(node.nameplate_w())).ok());
  }
  const double tokens = node.tokens();
  ASSERT_GT(tokens, 0);
  for (; k * 0.25 < 30; ++k) {
    ASSERT_TRUE((*a)->step(k * 0.25, assignment(node.min_w(), true)).ok());
  }
  EXPECT_TRUE(node.paused());
  EXPECT_DOUBLE_EQ(node.tokens(), tokens);
  EXPECT_LT(node.power_w(), node.min_w());
  EXPECT_TRUE((*a)->tick().paused());
  EXPECT_DOUBLE_EQ((*a)->tick().latest().time_s, (k - 1) * 0.25);
  ASSERT_TRUE((*a)->step(k * 0.25, assignment(node.nameplate_w())).ok());
  EXPECT_FALSE((*a)->tick().paused());
  EXPECT_FALSE(node.paused());
}

}  // namespace
}  // namespace fw::fleet

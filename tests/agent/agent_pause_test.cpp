// The coordinator's pause reaches the node's jobs through the agent (issue #45: the deployed
// path): an assignment with "pause" is taken by the follow rule even at the same watts, relayed
// to every registered job (RegisteredJob::paused, sent with its knobs), to a job registered
// while it holds too, and lifted by the next assignment without it. A fallback share never
// pauses.

#include <gtest/gtest.h>

#include <optional>

#include "agent/agent_tick.hpp"
#include "agent/fleet_follower.hpp"
#include "agent/registry_channel.hpp"

namespace fw::agent {
namespace {

fleet::NodeBudget assignment(double w, bool pause) {
  fleet::NodeBudget b;
  b.watts = w;
  b.source = fleet::NodeBudget::Source::kAssignment;
  b.pause = pause;
  return b;
}

TEST(BudgetChange, APauseCountsAtTheSameWattsAndOnlyAnAssignmentPauses) {
  auto b = budget_change(assignment(800, true), 400, 800, "coordinator", false);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->pause);
  EXPECT_DOUBLE_EQ(b->watts, 800);
  EXPECT_FALSE(budget_change(assignment(800, true), 400, 800, "coordinator", true).has_value());
  b = budget_change(assignment(800, false), 400, 800, "coordinator", true);
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->pause);
  fleet::NodeBudget safe = assignment(800, true);
  safe.source = fleet::NodeBudget::Source::kSafeShare;
  b = budget_change(safe, 400, 800, "coordinator", true);
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->pause);
  EXPECT_EQ(b->source, "coordinator_safe_share");
}

class StubFollower : public BudgetFollower {
 public:
  std::optional<FleetBudget> follow(const NodePlant& plant, const Snapshot&,
                                    const std::vector<RegisteredJob>&, double now_w,
                                    const std::string& now_source, bool now_pause) override {
    return budget_change(budget, node_floor_w(plant.info()), now_w, now_source, now_pause);
  }
  fleet::NodeBudget budget;
};

TEST(AgentPause, TheAssignmentsPauseReachesEveryRegisteredJob) {
  AgentConfig cfg;
  cfg.plant.backend =
      "sim:" + std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pretrain-a100x8.yaml";
  cfg.period_s = 0.5;
  cfg.job_silent_after_s = 0;
  JobRegistry jobs;
  RegistryChannel channel(jobs);
  auto plant = NodePlant::open(cfg.plant, &channel);
  ASSERT_TRUE(plant.ok()) << plant.status().message();
  CommandQueue commands;
  StubFollower follower;
  follower.budget = assignment(2400, false);
  AgentTick tick(cfg, **plant, commands, jobs, &follower);
  tick.set_log([](const std::string&) {});
  int pauses = 0;
  tick.on_pause([&](bool) { ++pauses; });
  Budget first;
  first.watts = 2400;
  ASSERT_TRUE(tick.start(first).ok());
  ASSERT_EQ(jobs.add("pt", JobInfo{}), JobRegistry::Outcome::kOk);
  double t = 0;
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i, t += cfg.period_s) {
      tick.tick(t);
      tick.advance();
    }
  };
  run(4);
  EXPECT_FALSE(tick.paused());
  EXPECT_FALSE(jobs.get("pt")->paused);
  const uint64_t v = jobs.get("pt")->knob_version;
  follower.budget = assignment(2400, true);  // the same watts: the pause alone
  run(1);
  EXPECT_TRUE(tick.paused());
  EXPECT_TRUE(jobs.get("pt")->paused);
  EXPECT_GT(jobs.get("pt")->knob_version, v);  // a long poll wakes on it
  ASSERT_EQ(jobs.add("late", JobInfo{}), JobRegistry::Outcome::kOk);
  run(1);
  EXPECT_TRUE(jobs.get("late")->paused);
  follower.budget = assignment(2400, false);
  run(1);
  EXPECT_FALSE(tick.paused());
  EXPECT_FALSE(jobs.get("pt")->paused);
  EXPECT_FALSE(jobs.get("late")->paused);
  EXPECT_EQ(pauses, 2);
}

}  // namespace
}  // namespace fw::agent

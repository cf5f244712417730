// Issue 46: a pipeline plan published through the site coordinator reaches the agent
// (`plan:fleet`, registry/builtin_controllers.cpp; fleet/node_link.hpp plan()). The agent's tick
// prepares the controller on the plan its fleet link last read for the job, prepares it again
// when the link sees the plan change, and keeps the plan in force when the new one is refused
// (deleted). Without a coordinator `plan:fleet` is refused naming why.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../constant_plan.hpp"  // constant_plan
#include "agent/agent_tick.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/fleet_follower.hpp"
#include "agent/registry_channel.hpp"
#include "control/controller_spec.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::agent {
namespace {

using testing_plans::constant_plan;

// A coordinator that assigns the node's nameplate and publishes `text` for job `job`.
class PlanFollower : public BudgetFollower {
 public:
  std::optional<FleetBudget> follow(const NodePlant& plant, const Snapshot&,
                                    const std::vector<RegisteredJob>&,
                                    const FleetBudget& now) override {
    fleet::NodeBudget b;
    b.watts = 3200;
    b.source = fleet::NodeBudget::Source::kAssignment;
    return budget_change(b, node_floor_w(plant.info()), now);
  }
  Result<fleet::PublishedPlan> published_plan(const std::string& j) const override {
    if (j != job || text.empty()) return Status::NotFound("job " + j + ": no plan published");
    return fleet::PublishedPlan{text, revision};
  }
  int64_t plan_changes() const override { return changes; }
  void publish(const std::string& t) {
    text = t;
    ++revision;
    ++changes;
  }
  std::string job, text;
  int64_t revision = 0, changes = 0;
};

TEST(FleetPlan, ThePublishedPlanIsAppliedAndPreparedAgainWhenItChanges) {
  AgentConfig cfg;
  cfg.plant.backend = "sim:" + std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pp4-a100x8.yaml";
  cfg.period_s = 0.5;
  cfg.job_silent_after_s = 0;
  cfg.controller = "plan:fleet,stages=0+4:1+5:2+6:3+7,period_s=0.5";
  JobRegistry jobs;
  RegistryChannel channel(jobs);
  auto plant = NodePlant::open(cfg.plant, &channel);
  ASSERT_TRUE(plant.ok()) << plant.status().message();
  ASSERT_FALSE((*plant)->info().jobs.empty());
  CommandQueue commands;
  PlanFollower follower;
  follower.job = (*plant)->info().jobs[0].name;
  follower.publish(constant_plan({300, 250, 200, 350}));
  AgentTick tick(cfg, **plant, commands, jobs, &follower);
  std::vector<std::string> lines;
  tick.set_log([&](const std::string& l) { lines.push_back(l); });
  Budget first;
  first.watts = 3200;
  ASSERT_TRUE(tick.start(first).ok());
  double t = 0;
  auto run = [&](int n) {
    for (int i = 0; i < n; ++i, t += cfg.period_s) {
      tick.tick(t);
      tick.advance();
    }
  };
  auto caps = [&] {
    std::vector<double> out;
    for (const auto& g : tick.latest().gpus) out.push_back(std::round(g.cap_w));
    return out;
  };
  run(4);
  EXPECT_EQ(caps(), (std::vector<double>{300, 250, 200, 350, 300, 250, 200, 350}));
  follower.publish(constant_plan({280, 280, 220, 390}));
  run(4);
  EXPECT_EQ(caps(), (std::vector<double>{280, 280, 220, 390, 280, 280, 220, 390}));
  EXPECT_EQ(tick.controller_spec(), cfg.controller);
  // Deleted (or refused): the plan in force stays, and the log says why.
  follower.publish("");
  run(4);
  EXPECT_EQ(caps(), (std::vector<double>{280, 280, 220, 390, 280, 280, 220, 390}));
  bool said = false;
  for (const std::string& l : lines) said |= l.find("the one in force stays") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(FleetPlan, WithoutACoordinatorPlanFleetIsRefused) {
  AgentConfig cfg;
  cfg.plant.backend = "sim:" + std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/caps-pp4-a100x8.yaml";
  JobRegistry jobs;
  RegistryChannel channel(jobs);
  auto plant = NodePlant::open(cfg.plant, &channel);
  ASSERT_TRUE(plant.ok()) << plant.status().message();
  auto spec = parse_controller_spec("plan:fleet");
  ASSERT_TRUE(spec.ok());
  BudgetSchedule b;
  b.entries = {{0, Budget{3200, BudgetScope::kNode, 30}}};
  auto p = registry::prepare_controller(
      *spec, agent_controller_env(cfg, **plant, (*plant)->info(), b, nullptr));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("follows no coordinator"), std::string::npos)
      << p.status().message();
  EXPECT_TRUE(follows_fleet_plan("plan:fleet,stages=0:1"));
  EXPECT_FALSE(follows_fleet_plan("plan:/srv/plans/pp.json"));
}

}  // namespace
}  // namespace fw::agent

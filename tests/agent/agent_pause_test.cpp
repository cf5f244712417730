// The coordinator's pause (issue #45: the deployed path) and start and stop gates (issue #48:
// staggered starts and stops) reach the node's jobs through the agent: an assignment with
// "pause", "start_at_unix_s" or "stop_at_unix_s" is taken by the follow rule even at the same
// watts, relayed to every registered job (RegisteredJob::paused / start_at_unix_s /
// stop_at_unix_s, sent with its knobs), to a job
// registered while it holds too, and lifted by the next assignment without it. A fallback
// share never pauses nor gates.

#include <gtest/gtest.h>

#include <optional>

#include "agent/agent_tick.hpp"
#include "agent/fleet_budget.hpp"
#include "agent/fleet_follower.hpp"
#include "agent/registry_channel.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::agent {
namespace {

fleet::NodeBudget assignment(double w, bool pause) {
  fleet::NodeBudget b;
  b.watts = w;
  b.source = fleet::NodeBudget::Source::kAssignment;
  b.pause = pause;
  return b;
}

FleetBudget in_force(double w, bool pause, double start_at = 0) {
  FleetBudget f;
  f.watts = w;
  f.source = "coordinator";
  f.pause = pause;
  f.start_at_unix_s = start_at;
  return f;
}

TEST(BudgetChange, APauseOrAStartGateCountsAtTheSameWattsAndOnlyAnAssignmentPauses) {
  auto b = budget_change(assignment(800, true), 400, in_force(800, false));
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->pause);
  EXPECT_DOUBLE_EQ(b->watts, 800);
  EXPECT_FALSE(budget_change(assignment(800, true), 400, in_force(800, true)).has_value());
  b = budget_change(assignment(800, false), 400, in_force(800, true));
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->pause);
  fleet::NodeBudget gated = assignment(800, false);
  gated.start_at_unix_s = 1.9e9;
  b = budget_change(gated, 400, in_force(800, false));
  ASSERT_TRUE(b.has_value());
  EXPECT_DOUBLE_EQ(b->start_at_unix_s, 1.9e9);
  EXPECT_FALSE(budget_change(gated, 400, in_force(800, false, 1.9e9)).has_value());
  gated.stop_at_unix_s = 1.95e9;  // the stop gate counts the same way
  b = budget_change(gated, 400, in_force(800, false, 1.9e9));
  ASSERT_TRUE(b.has_value());
  EXPECT_DOUBLE_EQ(b->stop_at_unix_s, 1.95e9);
  gated.stop_at_unix_s = 0;
  fleet::NodeBudget safe = assignment(800, true);
  safe.source = fleet::NodeBudget::Source::kSafeShare;
  safe.start_at_unix_s = 1.9e9;
  b = budget_change(safe, 400, in_force(800, true));
  ASSERT_TRUE(b.has_value());
  EXPECT_FALSE(b->pause);
  EXPECT_DOUBLE_EQ(b->start_at_unix_s, 0);  // only an assignment gates
  EXPECT_EQ(b->source, "coordinator_safe_share");
}

// A job's announced start is published in the node's record (the coordinator's start gate
// reads it): now + starts_in_s; a job announcing none publishes 0 (not written).
TEST(FleetRecord, PublishesTheJobsAnnouncedStart) {
  PlantInfo info;
  info.gpus.resize(2);
  for (auto& g : info.gpus) g.max_cap_w = 700, g.min_cap_w = 200;
  JobInfo a, b;
  a.name = "a";
  a.gpus = {0};
  b.name = "b";
  b.gpus = {1};
  info.jobs = {a, b};
  Snapshot s;
  s.gpus.resize(2);
  s.jobs.resize(2);
  s.jobs[0].starts_in_s = 30;
  s.jobs[1].ends_in_s = 45;
  const fleet::NodeRecord r = fleet_record("n", info, s, 1000);
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(r.jobs[0].starts_at_unix_s, 1030);
  EXPECT_DOUBLE_EQ(r.jobs[1].starts_at_unix_s, 0);
  // And its announced end (the coordinator's stop gate reads it).
  EXPECT_DOUBLE_EQ(r.jobs[0].ends_at_unix_s, 0);
  EXPECT_DOUBLE_EQ(r.jobs[1].ends_at_unix_s, 1045);
}

class StubFollower : public BudgetFollower {
 public:
  std::optional<FleetBudget> follow(const NodePlant& plant, const Snapshot&,
                                    const std::vector<RegisteredJob>&,
                                    const FleetBudget& now) override {
    return budget_change(budget, node_floor_w(plant.info()), now);
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
  // The start and stop gates reach every job the same way.
  auto gate = [&](double fleet::NodeBudget::*in, double RegisteredJob::*handed, double at) {
    follower.budget.*in = at;
    run(1);
    EXPECT_DOUBLE_EQ((*jobs.get("pt")).*handed, at);
    EXPECT_DOUBLE_EQ((*jobs.get("late")).*handed, at);
  };
  gate(&fleet::NodeBudget::start_at_unix_s, &RegisteredJob::start_at_unix_s, 1.9e9);
  EXPECT_DOUBLE_EQ(tick.start_at_unix_s(), 1.9e9);
  gate(&fleet::NodeBudget::start_at_unix_s, &RegisteredJob::start_at_unix_s, 0);
  gate(&fleet::NodeBudget::stop_at_unix_s, &RegisteredJob::stop_at_unix_s, 1.95e9);
  EXPECT_DOUBLE_EQ(tick.stop_at_unix_s(), 1.95e9);
  gate(&fleet::NodeBudget::stop_at_unix_s, &RegisteredJob::stop_at_unix_s, 0);
  EXPECT_DOUBLE_EQ(tick.stop_at_unix_s(), 0);
}

}  // namespace
}  // namespace fw::agent

// Scenario loading: every shipped scenario loads; bad input names file:line: field.

#include "sim/scenario.hpp"

#include <gtest/gtest.h>

#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

TEST(Scenario, AllShippedScenariosLoad) {
  for (const char* name : {"grpo-7b-a100", "grpo-14b-a100x2", "grpo-72b-a100x4", "fleet-16xa100",
                           "pretrain-dense-h100x8", "pretrain-moe-h200x8", "finetune-moe-h200x8"}) {
    auto s = load_scenario(testing::source_path(std::string("scenarios/") + name + ".yaml"), {});
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().message();
    EXPECT_EQ(s->name, name);
    EXPECT_FALSE(s->budget.entries.empty());
    EXPECT_FALSE(s->jobs.empty());
  }
  auto fleet = load_scenario(testing::source_path("scenarios/fleet-16xa100.yaml"), {});
  ASSERT_TRUE(fleet.ok());
  EXPECT_EQ(fleet->gpus.size(), 16u);
  EXPECT_EQ(fleet->jobs.size(), 8u);
  EXPECT_DOUBLE_EQ(make_plant(*fleet, 1)->info().nameplate_w(), 6400);
}

const char* kBase =
    "name: t\n"
    "gpus:\n"
    "  - {model: a100-sxm4-80gb, count: 2}\n"
    "budget: {watts: 600, scope: job, window_s: 30}\n"
    "jobs:\n"
    "  - name: j\n"
    "    kind: grpo\n"
    "    model: qwen2.5-14b\n"
    "    gpus: 2\n";

TEST(Scenario, DefaultsAndOverrides) {
  auto s = parse_scenario(kBase, "t.yaml", {"jobs.0.group_size=4", "gpus.0.power_cap_w=250"});
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->jobs[0].knobs[static_cast<int>(Knob::kGroupSize)], 4);
  EXPECT_EQ(s->gpus[1].power_cap_w, 250);  // an entry with count applies to all its GPUs
  EXPECT_EQ(s->sample_period_s, 0.5);
  EXPECT_EQ(s->budget.entries[0].budget.scope, BudgetScope::kJob);
  EXPECT_GT(s->jobs[0].grpo.kv_capacity_seqs, 16);
}

TEST(Scenario, UnknownKeyNamesFileLineAndField) {
  auto s = parse_scenario(std::string(kBase) + "    gruop_size: 4\n", "t.yaml", {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("t.yaml:10: jobs.0.gruop_size: unknown key"),
            std::string::npos)
      << s.status().message();
  EXPECT_EQ(s.status().exit_code(), 2);
}

TEST(Scenario, OutOfRangeAndBadValues) {
  auto a = parse_scenario(kBase, "t.yaml", {"gpus.0.power_cap_w=50"});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("gpus.0.power_cap_w: 50 is out of range"), std::string::npos)
      << a.status().message();
  auto b = parse_scenario(kBase, "t.yaml", {"jobs.0.model=qwen-9000"});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("jobs.0.model: unknown model"), std::string::npos);
  auto c = parse_scenario(kBase, "t.yaml", {"budget.scope=galaxy"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("budget.scope"), std::string::npos);
  auto d = parse_scenario(kBase, "t.yaml", {"jobs.0.gpus=3"});
  ASSERT_FALSE(d.ok());
  auto e = parse_scenario(kBase, "t.yaml", {"nosuch.key=1"});
  ASSERT_FALSE(e.ok());
  auto f = parse_scenario(kBase, "t.yaml", {"jobs.0.group_size=0"});
  ASSERT_FALSE(f.ok());
}

TEST(Scenario, BudgetSchedule) {
  std::string text = kBase;
  text.replace(text.find("budget: {watts: 600, scope: job, window_s: 30}"),
               std::string("budget: {watts: 600, scope: job, window_s: 30}").size(),
               "budget:\n  - {start_s: 0, watts: 600, scope: job}\n"
               "  - {start_s: 100, watts: 400, scope: job, window_s: 10}");
  auto s = parse_scenario(text, "t.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->budget.entries.size(), 2u);
  EXPECT_EQ(s->budget.at(50).watts, 600);
  EXPECT_EQ(s->budget.at(150).watts, 400);
  EXPECT_EQ(s->budget.at(150).window_s, 10);
  std::string bad = text;
  bad.replace(bad.find("start_s: 100"), 12, "start_s: 0  ");
  EXPECT_FALSE(parse_scenario(bad, "t.yaml", {}).ok());
}

TEST(Scenario, SeventyTwoBOnA100sIsKvLimited) {
  auto s = load_scenario(testing::source_path("scenarios/grpo-72b-a100x4.yaml"), {});
  ASSERT_TRUE(s.ok());
  const auto& g = s->jobs[0].grpo;
  EXPECT_LT(g.kv_capacity_seqs,
            g.prompts_per_step * s->jobs[0].knobs[static_cast<int>(Knob::kGroupSize)]);
  // The same model on one GPU does not fit at all.
  std::string one =
      "name: t\ngpus: [{model: a100-sxm4-80gb}]\nbudget: {watts: 300}\n"
      "jobs: [{kind: grpo, model: qwen2.5-72b, gpus: 1}]\n";
  EXPECT_FALSE(parse_scenario(one, "t.yaml", {}).ok());
}

}  // namespace
}  // namespace fw::sim

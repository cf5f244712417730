#include "rl_train/training.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rl/policy.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::rl {
namespace {

class TrainingSession : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(FLEXWATT_BINARY_DIR) / "test-tmp" /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  TrainRequest tiny(int iterations) const {
    TrainRequest r;
    r.scenario_path = std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-7b-a100.yaml";
    r.out = (dir_ / "p.json").string();
    r.iterations = iterations;
    r.envs = 2;
    r.episode_s = 30;
    r.checkpoint_every = 1;
    r.ppo.update_epochs = 1;
    return r;
  }
  static int lines(const std::string& path) {
    std::ifstream f(path);
    int n = 0;
    for (std::string l; std::getline(f, l);) ++n;
    return n;
  }
  std::filesystem::path dir_;
};

TEST_F(TrainingSession, WritesPolicyLogAndCheckpoint) {
  auto s = run_training(tiny(2));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->iterations, 2);
  EXPECT_GT(s->total_steps, 0);
  EXPECT_EQ(s->checkpoint, (dir_ / "p.ckpt.json").string());
  EXPECT_EQ(lines(s->log), 3);  // header + 2 iterations
  auto p = rl::Policy::load(s->policy);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const nlohmann::json& m = p->metadata();
  EXPECT_EQ(m["simulated"], true);
  EXPECT_EQ(m["recipe"]["envs"], 2);
  EXPECT_EQ(m["randomization"]["ranges"].size(), 4u);  // both knobs: 2 workload + 2 starts
  EXPECT_EQ(s->to_json()["iterations"], 2);
}

TEST_F(TrainingSession, ResumeContinuesFromTheCheckpoint) {
  auto first = run_training(tiny(1));
  ASSERT_TRUE(first.ok()) << first.status().message();
  TrainRequest more = tiny(3);
  more.resume = first->checkpoint;
  auto second = run_training(more);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->iterations, 3);
  EXPECT_EQ(second->total_steps, 3 * first->total_steps);
  EXPECT_EQ(lines(second->log), 4);  // appended: header + 3 iterations
}

TEST_F(TrainingSession, ResumeRefusesAnotherRecipe) {
  auto first = run_training(tiny(1));
  ASSERT_TRUE(first.ok()) << first.status().message();
  TrainRequest other = tiny(2);
  other.envs = 3;
  other.resume = first->checkpoint;
  auto s = run_training(other);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("other settings"), std::string::npos);
}

TEST_F(TrainingSession, KnobsLeftOutKeepTheirConfiguredValue) {
  TrainRequest r = tiny(1);
  r.knobs = "gen_concurrency";
  auto s = run_training(r);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const nlohmann::json m = rl::Policy::load(s->policy)->metadata();
  for (const auto& range : m["randomization"]["ranges"]) {
    EXPECT_NE(range["key"], "jobs.0.group_size");
  }
  EXPECT_EQ(m["randomization"]["ranges"].size(), 3u);
  r.knobs = "bogus";
  EXPECT_FALSE(run_training(r).ok());
}

// A family of two scenario files: every episode draws one member with the training seed, and
// over 2 envs x 6 iterations both are drawn; the policy records the family.
TEST_F(TrainingSession, FamilyOfTwoFilesDrawsBoth) {
  TrainRequest r = tiny(6);
  const std::string src = FLEXWATT_SOURCE_DIR;
  r.family = {src + "/scenarios/grpo-7b-a100-drift.yaml"};
  auto s = run_training(r);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->family_draws.size(), 2u);
  EXPECT_GT(s->family_draws[0], 0);
  EXPECT_GT(s->family_draws[1], 0);
  EXPECT_EQ(s->family_draws[0] + s->family_draws[1], 12);  // one episode per env and iteration
  const nlohmann::json m = rl::Policy::load(s->policy)->metadata();
  ASSERT_EQ(m["family"]["members"].size(), 2u);
  EXPECT_EQ(m["family"]["members"][1], src + "/scenarios/grpo-7b-a100-drift.yaml");
  EXPECT_EQ(s->to_json()["family_draws"].size(), 2u);
}

// A drawn completion-length curve and budget steps are recorded in the policy's metadata.
TEST_F(TrainingSession, DriftRandomisationIsRecorded) {
  TrainRequest r = tiny(1);
  r.len_curves = "growing,u,declining";
  r.len_range = "0.5,2.5";
  r.budget_steps = 2;
  auto s = run_training(r);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const nlohmann::json m = rl::Policy::load(s->policy)->metadata();
  EXPECT_EQ(m["family"]["len_curves"], nlohmann::json({"growing", "u", "declining"}));
  EXPECT_EQ(m["family"]["len_range"], nlohmann::json({0.5, 2.5}));
  EXPECT_EQ(m["family"]["budget_steps"], 2);
  // Without the options the recipe is the earlier one: no family entry, so old checkpoints
  // still resume.
  auto plain = run_training(tiny(1));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(rl::Policy::load(plain->policy)->metadata()["recipe"].contains("family"));
}

// Bad family specs are refused, naming the field (the CLI exits 2 on InvalidArgument).
TEST_F(TrainingSession, BadFamilySpecIsRefused) {
  const std::string src = FLEXWATT_SOURCE_DIR;
  struct Case {
    const char* what;
    TrainRequest r;
    const char* message;
  };
  std::vector<Case> cases;
  TrainRequest shape = tiny(1);
  shape.len_curves = "growing,zigzag";
  cases.push_back({"unknown shape", shape, "--len-curves: unknown shape 'zigzag'"});
  TrainRequest range = tiny(1);
  range.len_curves = "growing";
  range.len_range = "2.5,0.5";
  cases.push_back({"range upside down", range, "--len-range"});
  TrainRequest range_text = tiny(1);
  range_text.len_curves = "u";
  range_text.len_range = "0.5";
  cases.push_back({"range of one value", range_text, "--len-range"});
  TrainRequest step = tiny(1);
  step.budget_steps = 1;
  step.budget_step_range = "1.1,0.9";
  cases.push_back({"step range upside down", step, "--budget-step-range"});
  TrainRequest layout = tiny(1);
  layout.family = {src + "/scenarios/caps-pretrain-a100x1.yaml"};
  cases.push_back({"member with another job", layout, "caps-pretrain-a100x1.yaml"});
  TrainRequest missing = tiny(1);
  missing.family = {src + "/scenarios/nope.yaml"};
  cases.push_back({"missing member", missing, "nope.yaml"});
  for (const Case& c : cases) {
    auto s = run_training(c.r);
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_EQ(s.status().exit_code(), 2) << c.what;
    EXPECT_NE(s.status().message().find(c.message), std::string::npos)
        << c.what << ": " << s.status().message();
  }
}

TEST(ShellQuote, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("a.json"), "a.json");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace fw::rl

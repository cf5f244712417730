#include "rl/train/training.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "rl/policy.hpp"

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

TEST(ShellQuote, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(shell_quote("a.json"), "a.json");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

}  // namespace
}  // namespace fw::rl

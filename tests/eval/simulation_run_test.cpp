#include "eval/simulation_run.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::eval {
namespace {

TEST(SimulationRun, WritesTheTraceAndSummarisesIt) {
  auto s =
      sim::load_scenario(std::string(FLEXWATT_SOURCE_DIR) + "/scenarios/grpo-14b-a100x2.yaml", {});
  ASSERT_TRUE(s.ok()) << s.status().message();
  s->duration_s = 10;
  const std::string dir = std::string(FLEXWATT_BINARY_DIR) + "/test-tmp/simulation_run";
  std::filesystem::remove_all(dir);
  auto a = run_simulation({*s, 3, {}, dir});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ((*a)["samples"], static_cast<int64_t>(10 / s->sample_period_s));
  EXPECT_EQ((*a)["gpus"].size(), 2u);
  double total = 0;
  for (const auto& g : (*a)["gpus"]) total += g["mean_power_w"].get<double>();
  EXPECT_DOUBLE_EQ((*a)["mean_total_power_w"].get<double>(), total);
  EXPECT_GT(total, 0);
  for (const char* f : {"gpus.csv", "jobs.csv", "meta.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
  }
  // Deterministic for a seed.
  auto b = run_simulation({*s, 3, {}, dir + "-b"});
  ASSERT_TRUE(b.ok());
  (*b)["out"] = (*a)["out"];
  EXPECT_EQ(*a, *b);
}

}  // namespace
}  // namespace fw::eval

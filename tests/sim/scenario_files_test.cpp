// Every scenario shipped in scenarios/ loads and builds a plant that reads, so a broken file fails
// here and not in a user's hands.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/scenario.hpp"
#include "sim_test_util.hpp"
#include "vocab/snapshot.hpp"

namespace fw::sim {
namespace {

TEST(ScenarioFiles, EveryShippedScenarioLoadsAndReads) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::source_path("scenarios"))) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    const std::string path = e.path().string();
    auto s = load_scenario(path, {});
    ASSERT_TRUE(s.ok()) << path << ": " << s.status().message();
    EXPECT_FALSE(s->budget.entries.empty()) << path;
    auto plant = make_plant(*s, 1);
    ASSERT_NE(plant, nullptr) << path;
    Snapshot snap;
    EXPECT_TRUE(plant->read(s->sample_period_s, snap).ok()) << path;
    EXPECT_EQ(snap.gpus.size(), plant->info().gpus.size()) << path;
  }
  EXPECT_GE(n, 9);  // the files shipped when this test was written
}

}  // namespace
}  // namespace fw::sim

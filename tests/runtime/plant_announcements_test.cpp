// A registered job's announcements (issue #48: starts_in_s, ends_in_s, checkpoint_in_iters,
// checkpoint_s; JobReading) reach both node plants' snapshots from the job channel: the NVML
// plant's (the channel's reading) and the sim backend's (laid over the simulated job of the
// same position, the seconds scaled by time_scale).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/node_plant.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw {
namespace {

namespace fs = std::filesystem;

// A job channel whose jobs the test sets.
class TestChannel : public JobChannel {
 public:
  uint64_t generation() const override { return 1; }
  std::vector<ChannelJob> jobs() const override { return jobs_; }
  void set_knobs(const std::string&, const KnobValues&) override {}
  std::vector<ChannelJob> jobs_;
};

ChannelJob announcing_job() {
  ChannelJob j;
  j.id = "pt";
  j.reading.phase = Phase::kForward;
  j.reading.steps_total = 3;
  j.reading.starts_in_s = 4;
  j.reading.ends_in_s = 100;
  j.reading.checkpoint_in_iters = 2;
  j.reading.checkpoint_s = 10;
  j.report_age_s = 0.5;
  return j;
}

std::string scenario() {
  return std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
}

TEST(PlantAnnouncements, TheSimPlantLaysTheChannelJobsOverTheSimulatedJob) {
  TestChannel channel;
  NodePlantConfig cfg;
  cfg.backend = scenario();
  auto p = NodePlant::open(cfg, &channel);
  ASSERT_TRUE(p.ok()) << p.status().message();
  Snapshot s;
  ASSERT_TRUE(p.value()->read(1.0, s).ok());
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_TRUE(std::isnan(s.jobs[0].starts_in_s));  // no channel job: the simulator's (none)
  EXPECT_TRUE(std::isnan(s.jobs[0].checkpoint_in_iters));

  channel.jobs_ = {announcing_job()};
  p.value()->refresh_jobs();
  ASSERT_TRUE(p.value()->read(2.0, s).ok());
  EXPECT_DOUBLE_EQ(s.jobs[0].starts_in_s, 4);
  EXPECT_DOUBLE_EQ(s.jobs[0].ends_in_s, 100);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_in_iters, 2);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_s, 10);
  EXPECT_NE(s.jobs[0].steps_total, 3);  // progress and phase stay the simulator's
  EXPECT_NE(s.jobs[0].phase, Phase::kForward);

  // The client's seconds are wall seconds; the plant's run time_scale faster.
  cfg.time_scale = 10;
  auto fast = NodePlant::open(cfg, &channel);
  ASSERT_TRUE(fast.ok()) << fast.status().message();
  ASSERT_TRUE(fast.value()->read(1.0, s).ok());
  EXPECT_DOUBLE_EQ(s.jobs[0].starts_in_s, 40);
  EXPECT_DOUBLE_EQ(s.jobs[0].ends_in_s, 1000);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_in_iters, 2);  // iterations: not scaled
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_s, 100);

  channel.jobs_.clear();  // the job leaves: nothing announced any more
  fast.value()->refresh_jobs();
  ASSERT_TRUE(fast.value()->read(2.0, s).ok());
  EXPECT_TRUE(std::isnan(s.jobs[0].ends_in_s));
  EXPECT_TRUE(std::isnan(s.jobs[0].checkpoint_s));
}

TEST(PlantAnnouncements, TheNvmlPlantCarriesTheChannelJobs) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("fw_plant_announce_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "script.txt") << "gpus 1\nprofile 0 b200\n";
  ::setenv("FAKE_NVML_SCRIPT", (dir / "script.txt").c_str(), 1);
  ::setenv("FAKE_NVML_STATE", (dir / "state.txt").c_str(), 1);
  TestChannel channel;
  channel.jobs_ = {announcing_job()};
  NodePlantConfig cfg;
  cfg.backend = "fake-nvml";
  cfg.nvml_library = FAKE_NVML_LIBRARY;
  auto p = NodePlant::open(cfg, &channel);
  ASSERT_TRUE(p.ok()) << p.status().message();
  Snapshot s;
  ASSERT_TRUE(p.value()->read(1.0, s).ok());
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_EQ(s.jobs[0].phase, Phase::kForward);
  EXPECT_DOUBLE_EQ(s.jobs[0].starts_in_s, 4);
  EXPECT_DOUBLE_EQ(s.jobs[0].ends_in_s, 100);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_in_iters, 2);
  EXPECT_DOUBLE_EQ(s.jobs[0].checkpoint_s, 10);
  p.value().reset();
  ::unsetenv("FAKE_NVML_SCRIPT");
  ::unsetenv("FAKE_NVML_STATE");
  fs::remove_all(dir);
}

// A pipeline job's registered stages follow its GPUs into the plant's indices (the `plan`
// controller's per-node share): an NVML index this agent does not manage drops its stage too.
// The step's age reaches the snapshot.
TEST(PlantAnnouncements, TheNvmlPlantKeepsEachGpusPipelineStage) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / ("fw_plant_stages_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "script.txt") << "gpus 4\n";
  ::setenv("FAKE_NVML_SCRIPT", (dir / "script.txt").c_str(), 1);
  ::setenv("FAKE_NVML_STATE", (dir / "state.txt").c_str(), 1);
  TestChannel channel;
  ChannelJob j = announcing_job();
  j.info.gpus = {3, 0, 1};  // NVML indices; 0 is not managed here
  j.info.pipeline_stages = {7, 4, 5};
  j.reading.step_age_s = 0.75;
  channel.jobs_ = {j};
  NodePlantConfig cfg;
  cfg.backend = "fake-nvml";
  cfg.nvml_library = FAKE_NVML_LIBRARY;
  cfg.gpus = {1, 2, 3};  // plant GPUs 0, 1, 2
  auto p = NodePlant::open(cfg, &channel);
  ASSERT_TRUE(p.ok()) << p.status().message();
  Snapshot s;
  ASSERT_TRUE(p.value()->read(1.0, s).ok());
  const PlantInfo& info = p.value()->info();
  ASSERT_EQ(info.jobs.size(), 1u);
  EXPECT_EQ(info.jobs[0].gpus, (std::vector<int>{2, 0}));
  EXPECT_EQ(info.jobs[0].pipeline_stages, (std::vector<int>{7, 5}));
  ASSERT_EQ(s.jobs.size(), 1u);
  EXPECT_DOUBLE_EQ(s.jobs[0].step_age_s, 0.75);
  p.value().reset();
  ::unsetenv("FAKE_NVML_SCRIPT");
  ::unsetenv("FAKE_NVML_STATE");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fw

// The node agent running `stabilize` on the fake NVML library's Blackwell GPUs (issue #48): the
// controller's power smoothing settings reach the driver through the NvmlPlant, the restore
// file records the settings found, and the settings go back when the controller is switched
// away and when the agent stops; on a GPU without power smoothing (H100) the controller is
// refused at start, naming the GPU. Fake clock (no sleeping); nothing here touches a real GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "agent/node_agent.hpp"
#include "step_clock.hpp"

namespace fw::agent {
namespace {

namespace fs = std::filesystem;

using testing::StepClock;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string read_lines(const std::string& path) {
  std::ifstream in(path);
  std::string out, line;
  while (std::getline(in, line)) out += line + "|";
  return out;
}

// The fake's placeholders (floor 20 %, up 500, down 250 W/s, hysteresis 1000 ms), smoothing off.
constexpr const char* kFound = "|0 smoothing 0 0|0 smoothing_profile 0 20 500 250 1000|";
// What stabilize commands before a job starts (no job registered: the node is idle): the hold
// floor 85 %, the start's slow ramp-up 15 W/s, the event ramp-down 50 W/s, no hysteresis.
constexpr const char* kBefore = "|0 smoothing 1 0|0 smoothing_profile 0 85 15 50 0|";

class SmoothingAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_smooth_agent_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::setenv("FAKE_NVML_STATE", (dir_ + "/state.txt").c_str(), 1);
    cfg_.plant.backend = "fake-nvml";
    cfg_.plant.nvml_library = FAKE_NVML_LIBRARY;
    cfg_.period_s = 0.1;
    cfg_.budget_w = 2000;
    cfg_.controller = "stabilize:pre_fill=off";
    cfg_.restore_file = dir_ + "/saved.json";
    cfg_.lock_file = dir_ + "/agent.lock";
    cfg_.server.unix_socket_path = dir_ + "/agent.sock";
    cfg_.server.tcp_port = -1;
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_SCRIPT");
    ::unsetenv("FAKE_NVML_STATE");
    fs::remove_all(dir_);
  }
  void script(const std::string& text) {
    std::ofstream(dir_ + "/script.txt") << text;
    ::setenv("FAKE_NVML_SCRIPT", (dir_ + "/script.txt").c_str(), 1);
  }
  std::string state() const { return read_lines(dir_ + "/state.txt"); }

  std::string dir_;
  AgentConfig cfg_;
};

TEST_F(SmoothingAgentTest, StabilizeWritesSmoothingAndTheSwitchAndTheStopRestoreIt) {
  script("gpus 2\nprofile * b200\n");
  cfg_.duration_s = 1.5;
  NodeAgent a(cfg_);
  Status s = a.start();
  ASSERT_TRUE(s.ok()) << s.message();
  // The restore file records every smoothing-capable GPU's settings found, by UUID.
  std::ifstream in(cfg_.restore_file);
  nlohmann::json saved = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(saved.contains("smoothing")) << saved.dump();
  ASSERT_EQ(saved["smoothing"].size(), 2u) << saved.dump();
  EXPECT_EQ(saved["smoothing"][0]["floor_pct"], 20) << saved.dump();
  EXPECT_EQ(saved["smoothing"][0]["enabled"], false) << saved.dump();
  EXPECT_TRUE(saved["smoothing"][0]["uuid"].get<std::string>().rfind("GPU-", 0) == 0);

  // stabilize until 0.45 s, uncontrolled until 0.85 s, then stabilize again.
  StepClock clock;
  std::string during, after_switch, status_during;
  auto submit = [&a](const std::string& spec) {
    AgentCommand c;
    c.who = "test";
    c.what = ControllerChange{spec};
    a.commands().submit(c, std::nullopt);
  };
  clock.on_sleep = [&] {
    const double t = clock.now_s();
    if (t >= 0.45 && during.empty()) {
      during = state();
      status_during = to_json(a.hub().latest()->state)["gpus"][1].dump();
      submit("uncontrolled");
    } else if (t >= 0.85 && after_switch.empty()) {
      after_switch = state();
      submit("stabilize:pre_fill=off");
    }
  };
  AgentRunSummary sum = a.run(clock, {});
  EXPECT_EQ(sum.fallbacks, 0);
  EXPECT_EQ(sum.write_failures, 0);
  EXPECT_TRUE(contains(during, kBefore)) << during;
  EXPECT_TRUE(contains(during, "|1 smoothing_profile 0 85 15 50 0|")) << during;
  // /v1/status: the settings in force on each GPU, as written and read back.
  EXPECT_TRUE(contains(status_during,
                       "\"smoothing\":{\"enabled\":true,\"floor_pct\":85.0,\"hysteresis_ms\":0.0,"
                       "\"profile\":0,\"ramp_down_w_per_s\":50.0,\"ramp_up_w_per_s\":15.0}"))
      << status_during;
  EXPECT_TRUE(contains(after_switch, kFound)) << after_switch;
  // Back on stabilize, then the stop: the settings found go back, the restore file goes.
  EXPECT_TRUE(contains(state(), kBefore)) << state();
  EXPECT_TRUE(a.shutdown().ok());
  EXPECT_TRUE(contains(state(), kFound)) << state();
  EXPECT_TRUE(contains(state(), "|1 smoothing 0 0|1 smoothing_profile 0 20 500 250 1000|"))
      << state();
  EXPECT_FALSE(fs::exists(cfg_.restore_file));
}

// A node with an H100 cannot apply stabilize's settings: the start fails as a config error
// (exit 2), naming the GPU and its model, before anything is written.
TEST_F(SmoothingAgentTest, AGpuWithoutSmoothingRefusesStabilizeNamingIt) {
  script("gpus 2\nprofile 0 b200\nprofile 1 h100\n");
  NodeAgent a(cfg_);
  Status s = a.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_TRUE(contains(s.message(), "GPU 1 (NVIDIA H100 80GB HBM3)")) << s.message();
  (void)a.shutdown();
  EXPECT_FALSE(contains(state(), "smoothing 1")) << state();
}

// The pre-start fill needs a fill workload, which the NVML plant does not have: pre_fill=on
// (the default) is refused, naming the way out.
TEST_F(SmoothingAgentTest, ThePreStartFillIsRefusedOnNvml) {
  script("gpus 1\nprofile 0 b200\n");
  cfg_.controller = "stabilize";
  NodeAgent a(cfg_);
  Status s = a.start();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_TRUE(contains(s.message(), "pre_fill=off")) << s.message();
  (void)a.shutdown();
}

// A restore file left by a run that died holds the smoothing it found: a restart puts it back
// at once and keeps it as what the stop restores.
TEST_F(SmoothingAgentTest, ARestartPutsBackThePreviousRunsSmoothing) {
  script("gpus 1\nprofile 0 b200\nsmoothing 0 yes enabled=1 floor_pct=70 up_w_per_s=5\n");
  {
    cfg_.duration_s = 0.3;
    NodeAgent first(cfg_);
    ASSERT_TRUE(first.start().ok());
    StepClock clock;
    (void)first.run(clock, {});
    ASSERT_TRUE(contains(state(), kBefore)) << state();
    // Dies without restoring: the restore file and the lock stay (the lock is released by exit;
    // here by the destructor, which restores: so the file is copied aside first).
    fs::copy_file(cfg_.restore_file, dir_ + "/died.json");
  }
  fs::copy_file(dir_ + "/died.json", cfg_.restore_file, fs::copy_options::overwrite_existing);
  std::ofstream(dir_ + "/state.txt") << "0 1000\n0 smoothing 1 0\n"
                                     << "0 smoothing_profile 0 85 15 50 0\n";
  cfg_.controller = "uncontrolled";
  NodeAgent second(cfg_);
  Status s = second.start();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(state(), "|0 smoothing 1 0|0 smoothing_profile 0 70 5 250 1000|"))
      << state();
  EXPECT_TRUE(second.shutdown().ok());
  EXPECT_TRUE(contains(state(), "|0 smoothing 1 0|0 smoothing_profile 0 70 5 250 1000|"))
      << state();
}

}  // namespace
}  // namespace fw::agent

// The node agent on the fake NVML library when cap writes fail (issue 44, item 4): a start that
// cannot write a cap refuses control mode (exit 2, naming the GPU, the NVML call, the error and
// the way out) and leaves the restore file as it found it; read_only starts anyway; a write that
// fails mid-run is counted per GPU (status and /metrics) and logged at most once a minute; each
// GPU's persistence mode is reported, with a warning at start when it is off. Fake clock (no
// sleeping); nothing here touches a real GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "agent/metrics.hpp"
#include "agent/node_agent.hpp"
#include "runtime/restore_file.hpp"
#include "step_clock.hpp"

namespace fw::agent {
namespace {

namespace fs = std::filesystem;

using testing::StepClock;

// Sets every managed GPU to 300 W, then 250 W, then 300 W, ...: a cap write at every decision
// (the limiter passes an unchanged cap on as no write).
class SwingController : public Controller {
 public:
  explicit SwingController(size_t gpus) : gpus_(gpus) {}
  std::string name() const override { return "swing"; }
  double period_s() const override { return 0.1; }
  Command update(const Observation&) override {
    Command c;
    c.power_cap_w.assign(gpus_, (calls_++ % 2) == 0 ? 300.0 : 250.0);
    return c;
  }
  ActuatorSet claims() const override { return all_actuators(); }

 private:
  size_t gpus_;
  int calls_ = 0;
};

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int count_lines_with(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  int n = 0;
  for (std::string l; std::getline(in, l);) n += contains(l, part) ? 1 : 0;
  return n;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CapWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fw_cap_write_XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::setenv("FAKE_NVML_STATE", (dir_ + "/state.txt").c_str(), 1);
    cfg_.plant.backend = "fake-nvml";
    cfg_.plant.nvml_library = FAKE_NVML_LIBRARY;
    cfg_.period_s = 0.1;
    cfg_.budget_w = 700;
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
  // The fake's script: GPUs with caps 100-400 W, 350 W found at start, then `extra`.
  void script(int gpus, const std::string& extra) {
    std::ofstream(dir_ + "/script.txt")
        << "gpus " << gpus
        << "\npower * 300\nlimits * min=100 max=400 default=400 enforced=350 limit=350\n"
        << extra;
    ::setenv("FAKE_NVML_SCRIPT", (dir_ + "/script.txt").c_str(), 1);
  }
  void swing_controller(NodeAgent& a, size_t gpus) {
    a.set_controller_maker([gpus](const std::string&) -> Result<std::unique_ptr<Controller>> {
      return std::unique_ptr<Controller>(new SwingController(gpus));
    });
  }
  std::shared_ptr<const Published> state(NodeAgent& a) { return a.hub().latest(); }

  std::string dir_;
  AgentConfig cfg_;
};

// Without root or CAP_SYS_ADMIN (no_permission), in a container or on a GPU that refuses caps
// (not_supported), the agent used to start, write nothing and say so at every decision. The
// start-up probe writes each GPU's cap in force back: a refusal fails the start as a config
// error would (exit 2), in one line naming the GPU, the call, the error and the way out.
TEST_F(CapWriteTest, StartRefusesControlWhenACapCannotBeWritten) {
  for (const char* code : {"no_permission", "not_supported"}) {
    SCOPED_TRACE(code);
    script(2, std::string("fail nvmlDeviceSetPowerManagementLimit ") + code + " gpu=1\n");
    NodeAgent a(cfg_);
    Status s = a.start();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
    EXPECT_EQ(s.exit_code(), 2);
    const std::string& m = s.message();
    EXPECT_TRUE(contains(m, "nvmlDeviceSetPowerManagementLimit (GPU 1)")) << m;
    EXPECT_TRUE(contains(m, std::string("no_permission") == code ? "NVML_ERROR_NO_PERMISSION"
                                                                 : "NVML_ERROR_NOT_SUPPORTED"))
        << m;
    EXPECT_TRUE(contains(m, "CAP_SYS_ADMIN")) << m;
    EXPECT_TRUE(contains(m, "read_only: true")) << m;
    EXPECT_FALSE(contains(m, "\n")) << m;
    EXPECT_TRUE(a.shutdown().ok());               // what the CLI does after a failed start
    EXPECT_FALSE(fs::exists(cfg_.restore_file));  // nothing was changed: nothing to restore
    // The caps found are the caps in force (GPU 0's probe wrote its own 350 W back).
    const std::string st = read_all(dir_ + "/state.txt");
    EXPECT_TRUE(st.empty() || st == "0 350\n1 350\n") << st;
  }
}

// A previous run died with its restore file in place: a start that cannot write leaves that
// file exactly as it was (the only record of the caps found before that run's first write).
TEST_F(CapWriteTest, AFailedProbeKeepsAPreviousRunsRestoreFile) {
  script(1, "fail nvmlDeviceSetPowerManagementLimit no_permission\n");
  RestoreRecord r{999999, "fake-nvml", 0, {{0, 320}}};
  ASSERT_TRUE(write_restore_file(cfg_.restore_file, r).ok());
  NodeAgent a(cfg_);
  Status s = a.start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  (void)a.shutdown();
  auto kept = read_restore_file(cfg_.restore_file);
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  ASSERT_TRUE(kept.value().has_value()) << "a failed start removed a previous run's restore file";
  EXPECT_EQ(kept.value()->pid, 999999);
  ASSERT_EQ(kept.value()->caps.size(), 1u);
  EXPECT_DOUBLE_EQ(kept.value()->caps[0].cap_w, 320);
}

// read_only writes nothing, so a node where writes are refused runs it (the way out named above).
TEST_F(CapWriteTest, ReadOnlyStartsWhereCapsCannotBeWritten) {
  script(2, "fail nvmlDeviceSetPowerManagementLimit no_permission\n");
  cfg_.read_only = true;
  cfg_.duration_s = 0.3;
  NodeAgent a(cfg_);
  swing_controller(a, 2);
  Status s = a.start();
  ASSERT_TRUE(s.ok()) << s.message();
  StepClock clock;
  AgentRunSummary sum = a.run(clock, {});
  EXPECT_EQ(sum.write_failures, 0);
  auto p = state(a);
  EXPECT_TRUE(p->state.read_only);
  nlohmann::json j = to_json(p->state);
  EXPECT_EQ(j["gpus"][0]["cap_write_failures_total"], 0) << j.dump();
  EXPECT_TRUE(a.shutdown().ok());
  EXPECT_FALSE(fs::exists(cfg_.restore_file));
}

// A write that fails mid-run (the GPU's driver starts refusing after 3 calls) is counted per GPU,
// in GET /v1/status and on /metrics, and logged when it first fails, then at most once a minute
// of plant time with the count since the last line — not at every decision (130 ticks here).
TEST_F(CapWriteTest, WriteFailuresMidRunAreCountedAndLoggedAtMostOnceAMinute) {
  script(2, "fail nvmlDeviceSetPowerManagementLimit unknown gpu=0 after=3\n");
  cfg_.period_s = 0.5;
  cfg_.duration_s = 65;  // 130 ticks
  NodeAgent a(cfg_);
  swing_controller(a, 2);
  Status s = a.start();
  ASSERT_TRUE(s.ok()) << s.message();
  StepClock clock;
  ::testing::internal::CaptureStderr();
  AgentRunSummary sum = a.run(clock, {});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(sum.ticks, 130);
  EXPECT_GT(sum.write_failures, 100);
  auto p = state(a);
  nlohmann::json j = to_json(p->state);
  ASSERT_EQ(j["gpus"].size(), 2u) << j.dump();
  EXPECT_EQ(j["gpus"][0]["cap_write_failures_total"], sum.write_failures) << j.dump();
  EXPECT_EQ(j["gpus"][1]["cap_write_failures_total"], 0) << j.dump();
  const std::string text = render_metrics(p->state, "test", p->state.time_unix_s);
  EXPECT_TRUE(contains(text, "# TYPE flexwatt_gpu_cap_write_failures_total counter")) << text;
  EXPECT_TRUE(contains(text, "flexwatt_gpu_cap_write_failures_total{gpu=\"0\",UUID=\"")) << text;
  EXPECT_TRUE(contains(text, "} " + std::to_string(sum.write_failures) + "\n")) << text;
  EXPECT_TRUE(contains(text, "flexwatt_gpu_cap_write_failures_total{gpu=\"1\",")) << text;
  // The first failure and one a minute later: two lines in 65 s.
  EXPECT_EQ(count_lines_with(log, "nvmlDeviceSetPowerManagementLimit (GPU 0)"), 2) << log;
  EXPECT_TRUE(contains(log, "failed writes since the last message")) << log;
  EXPECT_FALSE(a.shutdown().ok());  // GPU 0 still refuses: the restore file is kept
  EXPECT_TRUE(fs::exists(cfg_.restore_file));
}

// Issue 44 item 1: which power reading the agent controls on is reported per GPU (status and
// /metrics) with its averaging: field 185 (the 1 s average) where the device answers it, else
// nvmlDeviceGetPowerUsage (a ~1 s trailing average on Hopper, instant on GA100). It was never
// reported, and the agent controlled on field 186 (instant) where the simulator gives an H100
// the 1 s average.
TEST_F(CapWriteTest, PowerSourceIsReportedPerGpu) {
  script(2, "field_average 0 yes\n");
  NodeAgent a(cfg_);
  swing_controller(a, 2);
  ASSERT_TRUE(a.start().ok());
  auto p = state(a);
  nlohmann::json j = to_json(p->state);
  EXPECT_EQ(j["gpus"][0]["power_source"], "nvml_field_power_average") << j.dump();
  EXPECT_EQ(j["gpus"][0]["power_averaging"], "avg_1s") << j.dump();
  EXPECT_EQ(j["gpus"][1]["power_source"], "nvmlDeviceGetPowerUsage") << j.dump();
  EXPECT_EQ(j["gpus"][1]["power_averaging"], "unknown") << j.dump();  // a model NVML names not
  const std::string text = render_metrics(p->state, "test", p->state.time_unix_s);
  EXPECT_TRUE(contains(text, "source=\"nvmlDeviceGetPowerUsage\",averaging=\"unknown\"")) << text;
}

// nvmlDeviceGetPersistenceMode (read only): each GPU's mode in GET /v1/status and on /metrics;
// a GPU without it loses its cap when the driver unloads, which the start warns about.
TEST_F(CapWriteTest, PersistenceModeIsReportedAndAnOffGpuWarnedAbout) {
  script(2, "persistence 1 off\n");
  NodeAgent a(cfg_);
  swing_controller(a, 2);
  ::testing::internal::CaptureStderr();
  Status s = a.start();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(count_lines_with(log, "persistence mode is off"), 1) << log;
  EXPECT_TRUE(contains(log, "GPU 1")) << log;
  EXPECT_FALSE(contains(log, "GPU 0 ")) << log;
  auto p = state(a);
  nlohmann::json j = to_json(p->state);
  EXPECT_EQ(j["gpus"][0]["persistence_mode"], true) << j.dump();
  EXPECT_EQ(j["gpus"][1]["persistence_mode"], false) << j.dump();
  const std::string text = render_metrics(p->state, "test", p->state.time_unix_s);
  EXPECT_TRUE(contains(text, "# TYPE flexwatt_gpu_persistence_mode_enabled gauge")) << text;
  const auto line = [&](int gpu) {
    const std::string head =
        "flexwatt_gpu_persistence_mode_enabled{gpu=\"" + std::to_string(gpu) + "\"";
    const size_t at = text.find(head);
    return at == std::string::npos ? std::string() : text.substr(at, text.find('\n', at) - at);
  };
  EXPECT_EQ(line(0).substr(line(0).rfind(' ') + 1), "1") << text;
  EXPECT_EQ(line(1).substr(line(1).rfind(' ') + 1), "0") << text;
  EXPECT_TRUE(a.shutdown().ok());
}

// Issue 44 item 3: one GPU that falls off the bus (Xid 79) failed every later read of the node,
// so the node sat on its safe setting for good. It is now dropped from control on the tick it
// is found (one read fails), and the other three stay controlled: their caps keep moving, the
// lost GPU is never written again, and the stop restores the three.
TEST_F(CapWriteTest, ALostGpuIsDroppedAndTheOthersStayControlled) {
  script(4, "lost 2 after_reads=5\n");
  cfg_.duration_s = 3;  // 30 ticks
  NodeAgent a(cfg_);
  swing_controller(a, 4);
  ASSERT_TRUE(a.start().ok());
  StepClock clock;
  ::testing::internal::CaptureStderr();
  AgentRunSummary sum = a.run(clock, {});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(sum.ticks, 30);
  EXPECT_EQ(sum.write_failures, 0) << log;  // the lost GPU is not written after its loss
  auto p = state(a);
  nlohmann::json j = to_json(p->state);
  ASSERT_EQ(j["lost_gpus"].size(), 1u) << j.dump();
  EXPECT_EQ(j["lost_gpus"][0]["index"], 2);
  ASSERT_EQ(j["gpus"].size(), 3u) << j.dump();
  EXPECT_EQ(j["gpus"][2]["index"], 3);
  EXPECT_EQ(j["fallback_reason"], "") << j.dump();
  EXPECT_EQ(j["fallbacks_total"]["stale_telemetry"], 1) << j.dump();
  EXPECT_TRUE(contains(log, "GPU 2 (GPU-")) << log;
  EXPECT_TRUE(contains(log, "the 3 others stay controlled")) << log;
  const std::string text = render_metrics(p->state, "test", p->state.time_unix_s);
  EXPECT_TRUE(
      std::regex_search(text, std::regex("\nflexwatt_gpus_lost\\{hostname=\"[^\"]*\"\\} 1\n")))
      << text;
  // Still controlled after the loss: the swing's last caps are on GPUs 0, 1, 3.
  const std::string during = read_all(dir_ + "/state.txt");
  EXPECT_TRUE(contains(during, "2 lost")) << during;
  EXPECT_TRUE(a.shutdown().ok());
  EXPECT_FALSE(fs::exists(cfg_.restore_file));
  const std::string after = read_all(dir_ + "/state.txt");
  EXPECT_TRUE(contains(after, "0 350\n1 350\n")) << after;
  EXPECT_TRUE(contains(after, "3 350\n")) << after;
}

// Issue 44 item 3: NVML can hang on a wedged GPU, and a hung read blocked the loop, the
// watchdog and the restore. Each read and write now runs with a deadline: the loop goes on
// (safe setting, stale telemetry) and the stop says the restore could not run, keeping the
// restore file for `--restore`.
TEST_F(CapWriteTest, AHungNvmlCallBlocksNeitherTheLoopNorTheStop) {
  script(2, "hang nvmlDeviceGetPowerUsage gpu=1 after=10 times=1 for_ms=1500\n");
  cfg_.duration_s = 3;  // 30 ticks
  cfg_.plant.nvml_deadline_s = 0.2;
  NodeAgent a(cfg_);
  swing_controller(a, 2);
  ASSERT_TRUE(a.start().ok());
  StepClock clock;
  const auto t0 = std::chrono::steady_clock::now();
  ::testing::internal::CaptureStderr();
  AgentRunSummary sum = a.run(clock, {});
  const Status stop = a.shutdown();
  const std::string log = ::testing::internal::GetCapturedStderr();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(sum.ticks, 30);
  EXPECT_LT(wall_s, 1.2);  // one deadline (0.2 s), not the 1.5 s hang, nor one per tick
  EXPECT_TRUE(contains(log, "NVML call did not return within 0.2 s")) << log;
  EXPECT_TRUE(contains(log, "stale_telemetry")) << log;
  EXPECT_FALSE(stop.ok());
  EXPECT_TRUE(contains(stop.message(), "has not returned")) << stop.message();
  EXPECT_TRUE(fs::exists(cfg_.restore_file));                    // kept for --restore
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));  // let the call return
}

// Holds every GPU at a fixed cap.
class FixedController : public Controller {
 public:
  FixedController(size_t gpus, double cap_w) : gpus_(gpus), cap_w_(cap_w) {}
  std::string name() const override { return "fixed"; }
  double period_s() const override { return 0.1; }
  Command update(const Observation&) override {
    Command c;
    c.power_cap_w.assign(gpus_, cap_w_);
    return c;
  }
  ActuatorSet claims() const override { return all_actuators(); }

 private:
  size_t gpus_;
  double cap_w_;
};

// Issue 43 item 2: the fail-safe's command was written through the plant around the limiter, so
// a configured max_cap_change_w did not pace it: a fallback lifted 150 W caps to the 300 W
// safe cap in one write. The fail-safe is now a stage of the limit chain: its raise is paced
// by the limiter (slew_limited counts it), a cut passes at once, and the caps end where the
// controller holds them once the reads are back.
TEST_F(CapWriteTest, TheFailSafeGoesThroughTheLimiter) {
  script(2, "fail nvmlDeviceGetPowerUsage unknown gpu=0 after=10 times=4\n");
  cfg_.duration_s = 2;  // 20 ticks; reads fail at ticks 10-13
  cfg_.safe_cap_w = 300;
  cfg_.limiter.max_cap_change_w = 50;
  NodeAgent a(cfg_);
  a.set_controller_maker([](const std::string&) -> Result<std::unique_ptr<Controller>> {
    return std::unique_ptr<Controller>(new FixedController(2, 150));
  });
  ASSERT_TRUE(a.start().ok());
  StepClock clock;
  ::testing::internal::CaptureStderr();
  AgentRunSummary sum = a.run(clock, {});
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(sum.ticks, 20);
  EXPECT_TRUE(contains(log, "fallback to the safe setting: stale_telemetry")) << log;
  auto p = state(a);
  nlohmann::json j = to_json(p->state);
  EXPECT_GE(j["limiter_actions_total"]["slew_limited"].get<int64_t>(), 1) << j.dump();
  EXPECT_EQ(j["gpus"][0]["cap_w"], 150) << j.dump();  // the controller's, once reads are back
  EXPECT_TRUE(a.shutdown().ok());
}

}  // namespace
}  // namespace fw::agent

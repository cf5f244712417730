// The node agent's runtime pieces: restore file, node lock, sd_notify, NodePlant on sim.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actuation/fake_power_cap_actuator.hpp"
#include "runtime/clock.hpp"
#include "runtime/node_lock.hpp"
#include "runtime/node_plant.hpp"
#include "runtime/realtime_driver.hpp"
#include "runtime/restore_file.hpp"
#include "runtime/sd_notify.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw {
namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/fw_node_rt_XXXXXX";
  return ::mkdtemp(tmpl);
}

TEST(RestoreFile, RoundTripsAndLeavesNoTemporary) {
  std::string d = temp_dir();
  std::string path = d + "/saved.json";
  RestoreRecord r{42, "fake-nvml", 1.5e9, {{0, 300.0, "GPU-a"}, {1, 250.5}}};
  ASSERT_TRUE(write_restore_file(path, r).ok());
  auto back = read_restore_file(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back.value().has_value());
  EXPECT_EQ(back.value()->pid, 42);
  EXPECT_EQ(back.value()->backend, "fake-nvml");
  ASSERT_EQ(back.value()->caps.size(), 2u);
  EXPECT_EQ(back.value()->caps[1].gpu, 1);
  EXPECT_DOUBLE_EQ(back.value()->caps[1].cap_w, 250.5);
  EXPECT_EQ(back.value()->caps[0].uuid, "GPU-a");  // keyed by UUID where known
  EXPECT_EQ(back.value()->caps[1].uuid, "");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(d)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // the temporary was renamed, not left behind
  ASSERT_TRUE(remove_restore_file(path).ok());
  auto gone = read_restore_file(path);
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone.value().has_value());
  EXPECT_TRUE(remove_restore_file(path).ok());  // absent: nothing to do
  std::filesystem::remove_all(d);
}

TEST(RestoreFile, ATornOrForeignFileIsAnError) {
  std::string d = temp_dir();
  std::string path = d + "/saved.json";
  std::ofstream(path) << "{\"format\": \"flexwatt-restore-1\", \"caps\": [{\"gpu\": 0}]";
  auto r = read_restore_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  std::ofstream(path, std::ios::trunc) << "{\"format\": \"other\", \"caps\": []}";
  EXPECT_FALSE(read_restore_file(path).ok());
  // A corrupted GPU index that a 32-bit read would narrow to GPU 0: refused, not restored there.
  std::ofstream(path, std::ios::trunc)
      << "{\"format\": \"flexwatt-restore-1\", \"caps\": [{\"gpu\": 4294967296, \"cap_w\": 300}]}";
  auto narrowed = read_restore_file(path);
  ASSERT_FALSE(narrowed.ok());
  EXPECT_NE(narrowed.status().message().find("gpu 4294967296 out of range"), std::string::npos)
      << narrowed.status().message();
  std::filesystem::remove_all(d);
}

// Issue 44 N3: a file that parses but holds an impossible cap or a GPU twice is refused whole
// (it restored only some GPUs), naming the entry.
TEST(RestoreFile, ImpossibleCapsAndDuplicateGpusAreRefusedWhole) {
  std::string d = temp_dir();
  std::string path = d + "/saved.json";
  auto refused = [&](const std::string& caps, const std::string& why) {
    std::ofstream(path, std::ios::trunc)
        << "{\"format\": \"flexwatt-restore-1\", \"caps\": [" << caps << "]}";
    auto r = read_restore_file(path);
    EXPECT_FALSE(r.ok()) << caps;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
    }
  };
  refused("{\"gpu\": 0, \"cap_w\": 300}, {\"gpu\": 1, \"cap_w\": 1e9}",
          "cap_w 1000000000.0 out of range");
  refused("{\"gpu\": 0, \"cap_w\": -5}", "cap_w -5");
  refused("{\"gpu\": 0, \"cap_w\": 0}", "cap_w 0");
  refused("{\"gpu\": 1, \"cap_w\": 300}, {\"gpu\": 1, \"cap_w\": 250}", "gpu 1 twice");
  refused(
      "{\"gpu\": 0, \"cap_w\": 300, \"uuid\": \"GPU-x\"}, "
      "{\"gpu\": 1, \"cap_w\": 250, \"uuid\": \"GPU-x\"}",
      "uuid GPU-x twice");
  refused("{\"gpu\": 0, \"cap_w\": 300, \"uuid\": 7}", "uuid: a non-empty string");
  // null: the device had no readable cap (written as such); accepted, nothing to put back.
  std::ofstream(path, std::ios::trunc)
      << "{\"format\": \"flexwatt-restore-1\", \"caps\": [{\"gpu\": 0, \"cap_w\": null}]}";
  auto ok = read_restore_file(path);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_TRUE(std::isnan(ok.value()->caps.at(0).cap_w));
  std::filesystem::remove_all(d);
}

TEST(RestoreFile, RestoreCapsWritesEverySavedCapAndNamesUnmanagedGpus) {
  FakePowerCapActuator act({{0, {100, 400, 400}, 400}, {1, {100, 400, 400}, 400}});
  ASSERT_TRUE(act.set(0, 200).ok());
  ASSERT_TRUE(act.set(1, 150).ok());
  Status s = restore_caps(act, {{0, 400}, {7, 300}, {1, 380}});
  EXPECT_FALSE(s.ok());  // GPU 7 is not managed, but the others were still restored
  EXPECT_NE(s.message().find("GPU 7"), std::string::npos);
  EXPECT_DOUBLE_EQ(act.gpu(0).cap_w, 400);
  EXPECT_DOUBLE_EQ(act.gpu(1).cap_w, 380);
  EXPECT_FALSE(restore_caps(act, {{0, 9999}}).ok());  // out of range: validated, not written
  EXPECT_DOUBLE_EQ(act.gpu(0).cap_w, 400);
}

TEST(NodeLock, ASecondHolderIsRefusedUntilTheFirstIsGone) {
  std::string d = temp_dir();
  std::string path = d + "/agent.lock";
  auto first = NodeLock::acquire(path);
  ASSERT_TRUE(first.ok());
  auto second = NodeLock::acquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(second.status().message().find(std::to_string(::getpid())), std::string::npos);
  first.value().reset();
  EXPECT_TRUE(NodeLock::acquire(path).ok());
  std::filesystem::remove_all(d);
}

TEST(SdNotify, SendsOneDatagramToNotifySocket) {
  std::string d = temp_dir();
  std::string path = d + "/notify";
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  EXPECT_TRUE(sd_notify_send("WATCHDOG=1"));
  char buf[64] = {};
  ssize_t n = ::recv(fd, buf, sizeof buf - 1, MSG_DONTWAIT);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "WATCHDOG=1");
  ::unsetenv("NOTIFY_SOCKET");
  EXPECT_FALSE(sd_notify_send("WATCHDOG=1"));
  ::setenv("WATCHDOG_USEC", "4000000", 1);
  ::unsetenv("WATCHDOG_PID");
  EXPECT_DOUBLE_EQ(sd_watchdog_interval_s(), 2.0);
  ::setenv("WATCHDOG_PID", "1", 1);  // meant for another process
  EXPECT_DOUBLE_EQ(sd_watchdog_interval_s(), 0.0);
  ::unsetenv("WATCHDOG_USEC");
  ::unsetenv("WATCHDOG_PID");
  ::close(fd);
  std::filesystem::remove_all(d);
}

TEST(NodePlant, SimBackendValidatesCapsAndAdvancesInTime) {
  NodePlantConfig cfg;
  cfg.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
  auto p = NodePlant::open(cfg, nullptr);
  ASSERT_TRUE(p.ok()) << p.status().message();
  NodePlant& plant = *p.value();
  ASSERT_EQ(plant.info().gpus.size(), 1u);
  Snapshot s;
  ASSERT_TRUE(plant.read(1.0, s).ok());
  EXPECT_DOUBLE_EQ(s.time_s, 1.0);
  Command c;
  c.power_cap_w = {250};
  ASSERT_TRUE(plant.write(c).ok());
  ASSERT_TRUE(plant.read(2.0, s).ok());
  EXPECT_DOUBLE_EQ(s.gpus[0].cap_w, 250);
  c.power_cap_w = {5000};  // outside the device range: refused, nothing written
  EXPECT_FALSE(plant.write(c).ok());
  ASSERT_TRUE(plant.read(3.0, s).ok());
  EXPECT_DOUBLE_EQ(s.gpus[0].cap_w, 250);
}

TEST(NodePlant, UnknownBackendIsRefused) {
  NodePlantConfig cfg;
  cfg.backend = "gpu-magic";
  auto p = NodePlant::open(cfg, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("gpu-magic"), std::string::npos);
  cfg.backend = "fake-nvml";  // needs the library named
  EXPECT_FALSE(NodePlant::open(cfg, nullptr).ok());
}

TEST(NodePlant, TimeScaleIsForTheSimOnlyAndSimGpusHaveIds) {
  NodePlantConfig cfg;
  cfg.backend = "nvml";
  cfg.time_scale = 10;
  auto hw = NodePlant::open(cfg, nullptr);
  ASSERT_FALSE(hw.ok());
  EXPECT_NE(hw.status().message().find("time_scale"), std::string::npos);
  cfg.backend = std::string("sim:") + FLEXWATT_SOURCE_DIR + "/scenarios/grpo-7b-a100.yaml";
  auto sim = NodePlant::open(cfg, nullptr);
  ASSERT_TRUE(sim.ok()) << sim.status().message();
  EXPECT_EQ(sim.value()->node_gpus()[0].uuid, "sim-0");
  // What the simulator comes with is data of the plant, not a question of which plant it is.
  const NodePlantDefaults& d = sim.value()->defaults();
  EXPECT_DOUBLE_EQ(d.episode_s, 1800);
  EXPECT_FALSE(d.budget.entries.empty());
  EXPECT_TRUE(static_cast<bool>(d.model_plant));
  EXPECT_EQ(sim.value()->missed_deadlines(), MissedDeadlines::kCatchUp);
  EXPECT_TRUE(sim.value()->job_gpu_indices().empty());
}

// A clock whose time is set by the test; sleeping jumps to the deadline.
class ManualClock : public Clock {
 public:
  double now_s() override { return t_; }
  void sleep_until_s(double t_s) override { t_ = std::max(t_, t_s); }
  double t_ = 0;
};

// Sleeps to each deadline; at the 3rd sleep the clock jumps 0.35 s (a stalled machine).
class StallClock : public Clock {
 public:
  double now_s() override { return t_; }
  void sleep_until_s(double t_s) override {
    t_ = std::max(t_, t_s);
    if (++sleeps_ == 3) t_ += 0.35;
  }
  double t_ = 0;
  int sleeps_ = 0;
};

// The wall-clock driver: a stall skips the deadlines it passed (kSkip) or takes their ticks
// late (kCatchUp); either way every planned tick's plant time is k·period, and lateness is
// measured against it.
TEST(RealTimeDriver, MissedDeadlinesAreSkippedOrCaughtUp) {
  for (MissedDeadlines policy : {MissedDeadlines::kSkip, MissedDeadlines::kCatchUp}) {
    RealTimeOptions o;
    o.period_s = 0.1;
    o.num_ticks = 10;
    o.missed = policy;
    StallClock clock;
    std::vector<double> taken;
    int skipped = 0;
    RealTimeStats st = RealTimeDriver(o).run(
        clock, {}, [&](const RealTimeStats& s) { taken.push_back(s.plant_time_s); },
        [&] { ++skipped; });
    EXPECT_GE(st.missed, 2);
    EXPECT_GE(st.late_ticks, 1);
    EXPECT_GE(st.lateness_max_s, 0.25);
    if (policy == MissedDeadlines::kSkip) {
      EXPECT_EQ(skipped, st.missed);
      EXPECT_EQ(st.caught_up, 0);
      EXPECT_EQ(st.ticks + skipped, 10);
    } else {
      EXPECT_EQ(skipped, 0);
      EXPECT_EQ(st.caught_up, st.missed);
      EXPECT_EQ(st.ticks, 10);
      for (size_t k = 0; k < taken.size(); ++k) EXPECT_DOUBLE_EQ(taken[k], 0.1 * k);
    }
    EXPECT_EQ(static_cast<int64_t>(taken.size()), st.ticks);
  }
}

TEST(RealTimeDriver, StopsOnRequestBetweenTicks) {
  RealTimeOptions o;
  o.period_s = 0.1;
  StallClock clock;
  int ticks = 0;
  RealTimeStats st = RealTimeDriver(o).run(
      clock, [&] { return ticks >= 4; }, [&](const RealTimeStats&) { ++ticks; }, {});
  EXPECT_EQ(st.ticks, 4);
}

TEST(ScaledClock, RunsScaleTimesFasterBothWays) {
  ManualClock wall;
  wall.t_ = 2;
  ScaledClock fast(wall, 40);
  EXPECT_DOUBLE_EQ(fast.now_s(), 80);
  fast.sleep_until_s(120);  // 120 scaled seconds = 3 wall seconds
  EXPECT_DOUBLE_EQ(wall.t_, 3);
  EXPECT_DOUBLE_EQ(fast.now_s(), 120);
}

}  // namespace
}  // namespace fw

// NvmlPlant applying Command::gpu_settings (issue #48's power smoothing rows) through NVML, on
// the fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml: the b200 profile has power smoothing,
// h100 has none; `smoothing`, `driver` and `fail` directives). The fake's state file is what
// the driver holds: "P smoothing ENABLED ACTIVE" and "P smoothing_profile K FLOOR_PCT UP DOWN
// HYST" (W/s, ms) once a GPU's smoothing was set.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>

#include "runtime/node_plant.hpp"
#include "runtime/restore_file.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

#ifndef FAKE_NVML_LIBRARY
#define FAKE_NVML_LIBRARY FLEXWATT_BINARY_DIR "/tests/telemetry/fake_nvml/libnvidia-ml.so.1"
#endif
#ifndef FAKE_NVML_OLD_LIBRARY
#define FAKE_NVML_OLD_LIBRARY FLEXWATT_BINARY_DIR "/tests/telemetry/fake_nvml/old/libnvidia-ml.so.1"
#endif

namespace fw {
namespace {

namespace fs = std::filesystem;

constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// One GPU's row of kGpuSettingTable: floor %, ramp up W/s, ramp down W/s, hysteresis ms, fill W.
GpuSettingValues settings(double floor_pct, double up, double down, double hyst_ms,
                          double fill_w = kNone) {
  GpuSettingValues v = kNoGpuSettings;
  v[static_cast<int>(GpuSetting::kSmoothingFloor)] = floor_pct;
  v[static_cast<int>(GpuSetting::kSmoothingRampUp)] = up;
  v[static_cast<int>(GpuSetting::kSmoothingRampDown)] = down;
  v[static_cast<int>(GpuSetting::kSmoothingHysteresis)] = hyst_ms;
  v[static_cast<int>(GpuSetting::kFill)] = fill_w;
  return v;
}

class NvmlPlantSmoothingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fw_plant_smooth_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    ::setenv("FAKE_NVML_STATE", (dir_ / "state.txt").c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("FAKE_NVML_SCRIPT");
    ::unsetenv("FAKE_NVML_STATE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result<std::unique_ptr<NodePlant>> open(const std::string& script,
                                          const char* library = FAKE_NVML_LIBRARY,
                                          JobChannel* jobs = nullptr) {
    std::ofstream(dir_ / "script.txt") << script;
    ::setenv("FAKE_NVML_SCRIPT", (dir_ / "script.txt").c_str(), 1);
    NodePlantConfig cfg;
    cfg.backend = "fake-nvml";
    cfg.nvml_library = library;
    return NodePlant::open(cfg, jobs);
  }
  // The fake driver's state file, lines joined with '|'.
  std::string state() const {
    std::ifstream in(dir_ / "state.txt");
    std::string out, line;
    while (std::getline(in, line)) out += line + "|";
    return out;
  }
  fs::path dir_;
};

// The smoothing rows go to NVML on every GPU: floor % into PERCENT_TMP_FLOOR of the active
// preset profile, the rates in W/s, the hysteresis in ms, and the feature turned on.
TEST_F(NvmlPlantSmoothingTest, WritesTheSettingsOfEveryGpuThroughNvml) {
  auto p = open("gpus 2\nprofile * b200\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(85, 15, 50, 0), settings(60, 40, 45, 5)};
  Status s = p.value()->write(c);
  ASSERT_TRUE(s.ok()) << s.message();
  const std::string st = state();
  EXPECT_TRUE(contains(st, "|0 smoothing 1 0|")) << st;
  EXPECT_TRUE(contains(st, "|0 smoothing_profile 0 85 15 50 0|")) << st;
  EXPECT_TRUE(contains(st, "|1 smoothing 1 0|")) << st;
  EXPECT_TRUE(contains(st, "|1 smoothing_profile 0 60 40 45 5|")) << st;
  EXPECT_TRUE(contains(st, "|1 smoothing_profile 1 20 500 250 1000|")) << st;  // other profiles
}

// The table's "inf: no limit" has no NVML value (NVIDIA documents no range and no sentinel): it
// is written as the whole TMP ceiling per 10 ms (the b200 profile's 1000 W ceiling: 1e5 W/s).
TEST_F(NvmlPlantSmoothingTest, NoRampLimitIsTheWholeCeilingPerTenMilliseconds) {
  auto p = open("gpus 1\nprofile 0 b200\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(50, kInf, kInf, 0)};
  Status s = p.value()->write(c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(state(), "|0 smoothing_profile 0 50 100000 100000 0|")) << state();
}

// A row left NaN keeps what is in force on the device.
TEST_F(NvmlPlantSmoothingTest, UnsetRowsKeepTheSettingsInForce) {
  auto p = open("gpus 1\nprofile 0 b200\nsmoothing 0 yes up_w_per_s=70\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(40, kNone, kNone, kNone)};
  Status s = p.value()->write(c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(state(), "|0 smoothing_profile 0 40 70 250 1000|")) << state();
}

// One GPU without power smoothing (an H100 beside a B200): the settings are refused whole,
// NotSupported naming that GPU and its model, and no GPU's smoothing is touched.
TEST_F(NvmlPlantSmoothingTest, AGpuWithoutSmoothingRefusesTheSettingsNamingIt) {
  auto p = open("gpus 2\nprofile 0 b200\nprofile 1 h100\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(85, 15, 50, 0), settings(85, 15, 50, 0)};
  Status s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "GPU 1 (NVIDIA H100 80GB HBM3)")) << s.message();
  EXPECT_TRUE(contains(s.message(), "nothing applied")) << s.message();
  EXPECT_FALSE(contains(state(), "smoothing")) << state();
}

// The caps of the same command are still written (the budget does not depend on smoothing);
// the refusal of the settings is what write() returns.
TEST_F(NvmlPlantSmoothingTest, CapsOfARefusedCommandAreStillWritten) {
  auto p = open("gpus 2\nprofile * h100\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.power_cap_w = {500, 450};
  c.gpu_settings = {settings(85, 15, 50, 0), settings(85, 15, 50, 0)};
  Status s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "GPU 0 (NVIDIA H100 80GB HBM3)")) << s.message();
  EXPECT_EQ(state(), "0 500|1 450|");
}

// A floor outside what the device allows (MIN/MAX_PERCENT_TMP_FLOOR_SETTING) is refused as the
// actuator refuses it — InvalidArgument naming the GPU, the field and the range, never clamped —
// before any GPU is written.
TEST_F(NvmlPlantSmoothingTest, AFloorOutsideTheDeviceRangeIsRefusedBeforeAnyWrite) {
  auto p = open("gpus 2\nprofile * b200\nsmoothing 1 yes min_pct=30 max_pct=90\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(20, 15, 50, 0), settings(20, 15, 50, 0)};
  Status s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_TRUE(contains(s.message(), "GPU 1")) << s.message();
  EXPECT_TRUE(contains(s.message(), "smoothing_floor = 20 % is outside [30, 90] %")) << s.message();
  EXPECT_FALSE(contains(state(), "smoothing")) << state();
  // A negative hysteresis is the SafetyLimiter's to reject; a NaN-free, finite one passes here.
  c.gpu_settings = {settings(30, 15, 50, 0), settings(30, 15, 50, 0)};
  s = p.value()->write(c);
  EXPECT_TRUE(s.ok()) << s.message();
}

// Without a job channel (no job declared the fill hook) a non-zero fill is refused
// (NotSupported naming the row), with nothing applied; a zero fill (the fill off) is accepted.
TEST_F(NvmlPlantSmoothingTest, ANonZeroFillIsRefusedAndAZeroFillAccepted) {
  auto p = open("gpus 1\nprofile 0 b200\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(85, 50, 50, 0, 700)};
  Status s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "fill = 700 W")) << s.message();
  EXPECT_TRUE(contains(s.message(), "pre_fill=off")) << s.message();
  EXPECT_FALSE(contains(state(), "smoothing")) << state();
  c.gpu_settings = {settings(85, 15, 50, 0, 0)};
  s = p.value()->write(c);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(state(), "|0 smoothing_profile 0 85 15 50 0|")) << state();
  c.gpu_settings = {settings(kNone, kNone, kNone, kNone, 0)};  // the fill alone, off
  EXPECT_TRUE(p.value()->write(c).ok());
}

// A job channel that records the fill targets handed to each job.
class FillChannel : public JobChannel {
 public:
  uint64_t generation() const override { return 1; }
  std::vector<ChannelJob> jobs() const override { return jobs_; }
  void set_knobs(const std::string&, const KnobValues&) override {}
  void set_fill(const std::string& id, const std::map<int, double>& fill_w) override {
    fills[id] = fill_w;
  }
  std::vector<ChannelJob> jobs_;
  std::map<std::string, std::map<int, double>> fills;
};

ChannelJob channel_job(const std::string& id, std::vector<int> gpus, bool fill) {
  ChannelJob j;
  j.id = id;
  j.info.name = id;
  j.info.gpus = std::move(gpus);
  j.fill = fill;
  return j;
}

// On hardware the fill workload is a hook of the job's client, which a job declares when it
// registers ("fill": true): each GPU's fill target goes to the job that runs on that GPU, by
// NVML index (0: off). A non-zero fill on a GPU whose job has no hook is refused whole, as
// without any (nothing applied, nothing handed to any job).
TEST_F(NvmlPlantSmoothingTest, TheFillGoesToTheJobThatDeclaredTheHook) {
  FillChannel ch;
  ch.jobs_ = {channel_job("hooked", {0}, true), channel_job("plain", {1}, false)};
  auto p = open("gpus 2\nprofile * b200\n", FAKE_NVML_LIBRARY, &ch);
  ASSERT_TRUE(p.ok()) << p.status().message();
  p.value()->refresh_jobs();
  EXPECT_TRUE(p.value()->fill_support().ok()) << p.value()->fill_support().message();
  Command c;
  c.gpu_settings = {settings(85, 50, 50, 0, 700), settings(85, 50, 50, 0, 0)};
  Status s = p.value()->write(c);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(ch.fills.count("hooked"), 1u);
  EXPECT_EQ(ch.fills["hooked"], (std::map<int, double>{{0, 700}}));
  EXPECT_EQ(ch.fills.count("plain"), 0u);
  EXPECT_TRUE(contains(state(), "|0 smoothing_profile 0 85 50 50 0|")) << state();
  // The plain job's GPU cannot run one: refused whole, the hooked job told nothing new.
  ch.fills.clear();
  c.gpu_settings = {settings(85, 50, 50, 0, 0), settings(85, 50, 50, 0, 300)};
  s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "fill = 300 W on GPU 1")) << s.message();
  EXPECT_TRUE(ch.fills.empty());
  // Without a job that declares the hook there is no fill support.
  ch.jobs_ = {channel_job("plain", {}, false)};
  p.value()->refresh_jobs();
  EXPECT_EQ(p.value()->fill_support().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(p.value()->fill_support().message(), "\"fill\": true"))
      << p.value()->fill_support().message();
}

// A driver without power smoothing (before R570): the settings are refused naming the driver.
TEST_F(NvmlPlantSmoothingTest, ADriverWithoutSmoothingRefusesNamingIt) {
  auto p = open("gpus 1\nprofile 0 b200\ndriver 560.35.03\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Command c;
  c.gpu_settings = {settings(85, 15, 50, 0)};
  Status s = p.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "560.35.03")) << s.message();
  EXPECT_FALSE(contains(state(), "smoothing")) << state();
  auto old = open("gpus 1\nprofile 0 b200\n", FAKE_NVML_OLD_LIBRARY);
  ASSERT_TRUE(old.ok()) << old.status().message();
  s = old.value()->write(c);
  EXPECT_EQ(s.code(), StatusCode::kNotSupported) << s.message();
  EXPECT_TRUE(contains(s.message(), "nvmlDevicePowerSmoothingSetState")) << s.message();
}

// What the agent asks before it runs a controller that needs smoothing (fixed at open) or the
// fill (none here: no job declared the hook).
TEST_F(NvmlPlantSmoothingTest, SupportIsTheFirstRefusalInReadOrder) {
  {
    auto p = open("gpus 2\nprofile * b200\n");
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_TRUE(p.value()->smoothing_support().ok()) << p.value()->smoothing_support().message();
    EXPECT_EQ(p.value()->fill_support().code(), StatusCode::kNotSupported);
    EXPECT_TRUE(contains(p.value()->fill_support().message(), "fill hook"));
  }
  {
    auto p = open("gpus 3\nprofile 0 b200\nprofile 1 a100\nprofile 2 h100\n");
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Status s = p.value()->smoothing_support();
    EXPECT_EQ(s.code(), StatusCode::kNotSupported);
    EXPECT_TRUE(contains(s.message(), "power smoothing is not supported on GPU 1 (NVIDIA A100"))
        << s.message();
  }
  {
    auto p = open("gpus 1\nprofile 0 b200\n", FAKE_NVML_OLD_LIBRARY);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const Status s = p.value()->smoothing_support();
    EXPECT_EQ(s.code(), StatusCode::kNotSupported);
    EXPECT_TRUE(contains(s.message(), "no power smoothing in this driver")) << s.message();
  }
}

// Saved before the first write (the agent's start), written, then put back: only the GPUs the
// plant changed are written back (GPU 1 never was: its settings are not touched), and the
// settings in force are known throughout (the agent's /v1/status).
TEST_F(NvmlPlantSmoothingTest, RestorePutsBackWhatWasSavedOnTheGpusChanged) {
  auto p = open("gpus 2\nprofile * b200\nsmoothing 0 yes enabled=1 floor_pct=30\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  NodePlant& plant = *p.value();
  ASSERT_TRUE(plant.save_smoothing({}).ok());
  ASSERT_EQ(plant.saved_smoothing().size(), 2u);
  EXPECT_EQ(plant.saved_smoothing()[0].gpu, 0);
  EXPECT_DOUBLE_EQ(plant.saved_smoothing()[0].settings.floor_frac_of_tdp, 0.3);
  EXPECT_TRUE(plant.saved_smoothing()[0].settings.enabled);
  ASSERT_NE(plant.smoothing_in_force(1), nullptr);
  EXPECT_FALSE(plant.smoothing_in_force(1)->enabled);
  EXPECT_TRUE(plant.restore_smoothing().ok());  // nothing changed: nothing written
  EXPECT_FALSE(contains(state(), "smoothing")) << state();

  Command c;
  c.gpu_settings = {settings(85, 15, 50, 0), kNoGpuSettings};
  ASSERT_TRUE(plant.write(c).ok());
  EXPECT_TRUE(contains(state(), "|0 smoothing_profile 0 85 15 50 0|")) << state();
  ASSERT_NE(plant.smoothing_in_force(0), nullptr);
  EXPECT_DOUBLE_EQ(plant.smoothing_in_force(0)->ramp_up_w_per_s, 15);
  ASSERT_TRUE(plant.restore_smoothing().ok());
  EXPECT_TRUE(contains(state(), "|0 smoothing 1 0|0 smoothing_profile 0 30 500 250 1000|"))
      << state();
  EXPECT_FALSE(contains(state(), "1 smoothing")) << state();
  EXPECT_DOUBLE_EQ(plant.smoothing_in_force(0)->ramp_up_w_per_s, 500);
}

// A restart after a crash: the record kept (the dead run's restore file) replaces what is found
// on its GPU, and restore_smoothing() puts it in force.
TEST_F(NvmlPlantSmoothingTest, KeptSettingsAreSavedAndPutBack) {
  auto p = open("gpus 1\nprofile 0 b200\nsmoothing 0 yes enabled=1 floor_pct=85 up_w_per_s=15\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  PowerSmoothingSettings found;
  found.enabled = false;
  found.profile = 2;
  found.floor_frac_of_tdp = 0.4;
  found.ramp_up_w_per_s = 100;
  found.ramp_down_w_per_s = 200;
  found.ramp_down_hysteresis_ms = 300;
  ASSERT_TRUE(p.value()->save_smoothing({{0, found, ""}}).ok());
  EXPECT_EQ(p.value()->smoothing_in_force(0), nullptr);  // not in force until put back
  ASSERT_TRUE(p.value()->restore_smoothing().ok());
  const std::string st = state();
  EXPECT_TRUE(contains(st, "|0 smoothing 0 2|")) << st;
  EXPECT_TRUE(contains(st, "|0 smoothing_profile 2 40 100 200 300|")) << st;
  ASSERT_NE(p.value()->smoothing_in_force(0), nullptr);
  EXPECT_EQ(p.value()->smoothing_in_force(0)->profile, 2);
  // Settings no device holds are refused before anything is recorded.
  found.profile = 7;
  Status s = p.value()->save_smoothing({{0, found, ""}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
}

// On a plant without smoothing, a restore file's smoothing record cannot be put back: named.
TEST_F(NvmlPlantSmoothingTest, KeptSettingsOnAGpuWithoutSmoothingAreRefused) {
  auto p = open("gpus 1\nprofile 0 h100\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p.value()->save_smoothing({}).ok());
  EXPECT_TRUE(p.value()->saved_smoothing().empty());
  EXPECT_TRUE(p.value()->restore_smoothing().ok());
  PowerSmoothingSettings s;
  s.profile = 0;
  s.floor_frac_of_tdp = 0.2;
  s.ramp_up_w_per_s = s.ramp_down_w_per_s = s.ramp_down_hysteresis_ms = 1;
  Status st = p.value()->save_smoothing({{0, s, ""}});
  EXPECT_EQ(st.code(), StatusCode::kNotSupported) << st.message();
  EXPECT_TRUE(contains(st.message(), "GPU 0 (NVIDIA H100 80GB HBM3)")) << st.message();
}

// A GPU that falls off the bus after it was written is skipped by the restore (its reset puts
// the driver's settings back); the others are restored.
TEST_F(NvmlPlantSmoothingTest, ALostGpuIsSkippedByTheRestore) {
  auto p = open("gpus 2\nprofile * b200\nlost 1 after_reads=2\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  NodePlant& plant = *p.value();
  ASSERT_TRUE(plant.save_smoothing({}).ok());
  Command c;
  c.gpu_settings = {settings(85, 15, 50, 0), settings(85, 15, 50, 0)};
  ASSERT_TRUE(plant.write(c).ok());
  Snapshot snap;
  Status r;
  for (int i = 0; i < 5 && r.ok(); ++i) r = plant.read(i, snap);
  ASSERT_EQ(r.code(), StatusCode::kUnavailable) << r.message();
  ASSERT_EQ(plant.lost_gpus().size(), 1u);
  Status s = plant.restore_smoothing();
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(contains(state(), "|0 smoothing 0 0|0 smoothing_profile 0 20 500 250 1000|"))
      << state();
}

// The restore file carries the smoothing record (floor in percent), keyed by UUID; entries no
// device could hold are refused whole; a file without the key (an older flexwatt's) reads as
// before.
TEST_F(NvmlPlantSmoothingTest, TheRestoreFileCarriesTheSmoothingRecord) {
  const std::string path = (dir_ / "saved.json").string();
  PowerSmoothingSettings s;
  s.enabled = true;
  s.profile = 1;
  s.floor_frac_of_tdp = 0.35;
  s.ramp_up_w_per_s = 500;
  s.ramp_down_w_per_s = 250.5;
  s.ramp_down_hysteresis_ms = 1000;
  RestoreRecord r{7, "fake-nvml", 1.0, {{0, 300.0, "GPU-a"}}, {{0, s, "GPU-a"}}};
  ASSERT_TRUE(write_restore_file(path, r).ok());
  auto back = read_restore_file(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back.value()->smoothing.size(), 1u);
  const SavedSmoothing& b = back.value()->smoothing[0];
  EXPECT_EQ(b.uuid, "GPU-a");
  EXPECT_TRUE(b.settings.enabled);
  EXPECT_EQ(b.settings.profile, 1);
  EXPECT_NEAR(b.settings.floor_frac_of_tdp, 0.35, 1e-12);
  EXPECT_DOUBLE_EQ(b.settings.ramp_down_w_per_s, 250.5);
  EXPECT_DOUBLE_EQ(b.settings.ramp_down_hysteresis_ms, 1000);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(contains(text.str(), "\"floor_pct\": 35")) << text.str();

  const std::string head = R"({"format": "flexwatt-restore-1", "caps": [], "smoothing": [)";
  for (const std::string& bad :
       {std::string(R"({"gpu": 0, "enabled": 1, "profile": 0, "floor_pct": 20, )"
                    R"("ramp_up_w_per_s": 1, "ramp_down_w_per_s": 1, "hysteresis_ms": 0}]})"),
        std::string(R"({"gpu": 0, "enabled": true, "profile": 0, "floor_pct": 120, )"
                    R"("ramp_up_w_per_s": 1, "ramp_down_w_per_s": 1, "hysteresis_ms": 0}]})"),
        std::string(R"({"gpu": 0, "enabled": true, "profile": 0, "floor_pct": 20, )"
                    R"("ramp_up_w_per_s": -1, "ramp_down_w_per_s": 1, "hysteresis_ms": 0}]})"),
        std::string(R"({"gpu": 0, "enabled": true, "profile": 0, "floor_pct": 20, )"
                    R"("ramp_up_w_per_s": 1, "ramp_down_w_per_s": 1, "hysteresis_ms": 0}, )"
                    R"({"gpu": 0, "enabled": true, "profile": 0, "floor_pct": 20, )"
                    R"("ramp_up_w_per_s": 1, "ramp_down_w_per_s": 1, "hysteresis_ms": 0}]})")}) {
    std::ofstream(path) << head << bad;
    auto refused = read_restore_file(path);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(refused.status().message(), "smoothing")) << refused.status().message();
  }
  std::ofstream(path) << R"({"format": "flexwatt-restore-1", "caps": [{"gpu": 0, "cap_w": 300}]})";
  auto old = read_restore_file(path);
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_TRUE(old.value()->smoothing.empty());
}

}  // namespace
}  // namespace fw

// PowerSmoothingActuator over NVML, against the fake libnvidia-ml.so.1
// (tests/telemetry/fake_nvml: `smoothing`, `driver`, `writes`, `fail` directives).

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "actuation/nvml_power_smoothing_actuator.hpp"
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

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

PowerSmoothingRequest request(double floor_frac, double up, double down, double hyst_ms,
                              bool enabled = true) {
  PowerSmoothingRequest r;
  r.enabled = enabled;
  r.floor_frac_of_tdp = floor_frac;
  r.ramp_up_w_per_s = up;
  r.ramp_down_w_per_s = down;
  r.ramp_down_hysteresis_ms = hyst_ms;
  return r;
}

class PowerSmoothingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fw_smooth_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_SCRIPT");
    unsetenv("FAKE_NVML_STATE");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void script(const std::string& text) {
    const fs::path p = dir_ / "script.txt";
    std::ofstream(p) << text;
    setenv("FAKE_NVML_SCRIPT", p.c_str(), 1);
  }
  Result<std::unique_ptr<NvmlPowerSmoothingActuator>> open(
      const std::string& text, const char* library = FAKE_NVML_LIBRARY) {
    script(text);
    auto lib = nvml::NvmlLibrary::load_path(library);
    if (!lib.ok()) return lib.status();
    return NvmlPowerSmoothingActuator::open(std::move(lib).value());
  }
  fs::path dir_;
};

// The field ids follow the driver branch (NVIDIA's nvml.h: 251 in CUDA 12.8 and 13.1, 256 in
// 12.9 and 13.0).
TEST(PowerSmoothingFieldBase, FollowsTheDriverBranch) {
  EXPECT_EQ(power_smoothing_field_base("570.86.15"), 251u);
  EXPECT_EQ(power_smoothing_field_base("575.51.03"), 256u);
  EXPECT_EQ(power_smoothing_field_base("580.65.06"), 256u);
  EXPECT_EQ(power_smoothing_field_base("590.44.01"), 251u);
  EXPECT_EQ(power_smoothing_field_base("610.1"), 251u);
  EXPECT_EQ(power_smoothing_field_base("565.57.01"), 0u);  // before R570: no power smoothing
  EXPECT_EQ(power_smoothing_field_base(""), 0u);
  EXPECT_EQ(power_smoothing_field_base("r580"), 0u);
  EXPECT_EQ(power_smoothing_field_base("580x"), 0u);
}

TEST_F(PowerSmoothingTest, SetAndReadBackOnB200) {
  auto opened = open("profile 0 b200\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerSmoothingActuator& a = *opened.value();
  EXPECT_EQ(a.field_base(), 251u);  // the fake's default driver, 590.44.01
  ASSERT_TRUE(a.support(0).ok()) << a.support(0).message();
  const PowerSmoothingLimits lim = a.limits(0);
  EXPECT_DOUBLE_EQ(lim.tdp_w, 1000);
  EXPECT_EQ(lim.profiles, 5);
  EXPECT_DOUBLE_EQ(lim.floor_frac_min, 0);
  EXPECT_DOUBLE_EQ(lim.floor_frac_max, 1);

  auto before = a.read(0);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_FALSE(before->settings.enabled);
  EXPECT_EQ(before->settings.profile, 0);
  EXPECT_DOUBLE_EQ(before->settings.floor_frac_of_tdp, 0.2);  // the fake's placeholders
  EXPECT_NEAR(before->settings.ramp_up_w_per_s, 500, 1e-9);
  EXPECT_NEAR(before->settings.ramp_down_w_per_s, 250, 1e-9);
  EXPECT_DOUBLE_EQ(before->settings.ramp_down_hysteresis_ms, 1000);

  auto set = a.set(0, request(0.35, 120.5, 60.25, 2500));
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(set->settings.enabled);
  EXPECT_EQ(set->settings.profile, 0);
  EXPECT_DOUBLE_EQ(set->settings.floor_frac_of_tdp, 0.35);
  EXPECT_NEAR(set->floor_w(), 350, 1e-9);
  EXPECT_NEAR(set->settings.ramp_up_w_per_s, 120.5, 1e-9);  // the field says mW/s
  EXPECT_NEAR(set->settings.ramp_down_w_per_s, 60.25, 1e-9);
  EXPECT_DOUBLE_EQ(set->settings.ramp_down_hysteresis_ms, 2500);

  PowerSmoothingRequest in_watts = request(kUnset, 100, 100, 0, false);
  in_watts.floor_w = 450;
  auto w = a.set(0, in_watts);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_FALSE(w->settings.enabled);
  EXPECT_DOUBLE_EQ(w->settings.floor_frac_of_tdp, 0.45);
  EXPECT_DOUBLE_EQ(w->settings.ramp_down_hysteresis_ms, 0);
}

// On a driver of the 575-589 branches the fake, like NVIDIA's 12.9/13.0 headers, numbers the
// fields from 256; the actuator reads the same values there.
TEST_F(PowerSmoothingTest, Driver580UsesItsOwnFieldIds) {
  {
    auto opened = open("driver 580.65.06\nprofile 0 b200\nsmoothing 0 yes floor_pct=42\n");
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    EXPECT_EQ(opened.value()->driver_version(), "580.65.06");
    EXPECT_EQ(opened.value()->field_base(), 256u);
    auto r = opened.value()->read(0);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_DOUBLE_EQ(r->settings.floor_frac_of_tdp, 0.42);
  }  // shut down: the next open reads its script
  auto old = open("driver 565.57.01\nprofile 0 b200\n");
  EXPECT_EQ(old.status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(old.status().message(), "565.57.01")) << old.status().message();
}

TEST_F(PowerSmoothingTest, OutOfRangeIsRefusedBeforeAnyNvmlCall) {
  // Every set call fails with a recognisable code if reached, and so does every field read after
  // open's three (limits, state, active profile's parameters).
  auto opened = open(
      "profile 0 b200\nsmoothing 0 yes min_pct=10 max_pct=90\n"
      "fail nvmlDevicePowerSmoothingUpdatePresetProfileParam unknown\n"
      "fail nvmlDevicePowerSmoothingSetState unknown\n"
      "fail nvmlDevicePowerSmoothingActivatePresetProfile unknown\n"
      "fail nvmlDeviceGetFieldValues unknown after=3\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerSmoothingActuator& a = *opened.value();
  ASSERT_TRUE(a.support(0).ok()) << a.support(0).message();
  struct Case {
    PowerSmoothingRequest r;
    const char* names;
  };
  PowerSmoothingRequest both = request(0.5, 100, 100, 10);
  both.floor_w = 500;
  PowerSmoothingRequest watts_high = request(kUnset, 100, 100, 10);
  watts_high.floor_w = 950;
  const Case cases[] = {
      {request(0.05, 100, 100, 10), "floor_frac_of_tdp = 0.05 is outside [0.1, 0.9]"},
      {request(0.95, 100, 100, 10), "floor_frac_of_tdp = 0.95 is outside [0.1, 0.9]"},
      {request(kUnset, 100, 100, 10), "exactly one of floor_frac_of_tdp and floor_w"},
      {both, "exactly one of floor_frac_of_tdp and floor_w"},
      {watts_high, "floor_w = 950 W is outside [100, 900] W"},
      {request(0.5, -1, 100, 10), "ramp_up_w_per_s = -1 is outside [0, inf) W/s"},
      {request(0.5, 100, HUGE_VAL, 10), "ramp_down_w_per_s"},
      {request(0.5, 100, 100, kUnset), "ramp_down_hysteresis_ms"},
      {request(0.5, 100, 100, -3), "ramp_down_hysteresis_ms = -3 is outside [0, inf) ms"},
  };
  for (const Case& c : cases) {
    auto r = a.set(0, c.r);
    ASSERT_FALSE(r.ok()) << c.names;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().message();
    EXPECT_TRUE(contains(r.status().message(), c.names)) << r.status().message();
  }
  EXPECT_EQ(a.set(3, request(0.5, 100, 100, 10)).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(a.has_saved(0));  // nothing was read for a save, nothing written
  // In range: the device is reached (the injected failure).
  EXPECT_EQ(a.set(0, request(0.5, 100, 100, 10)).status().code(), StatusCode::kInternal);
}

TEST_F(PowerSmoothingTest, NotSupportedOnH100NamesTheModel) {
  auto opened = open("gpus 2\nprofile 0 h100\nprofile 1 b200\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerSmoothingActuator& a = *opened.value();
  const Status st = a.support(0);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(st.message(), "GPU 0 (NVIDIA H100 80GB HBM3)")) << st.message();
  EXPECT_TRUE(contains(st.message(), "NVML_FI_PWR_SMOOTHING_ENABLED=251")) << st.message();
  EXPECT_EQ(a.read(0).status().code(), StatusCode::kNotSupported);
  EXPECT_EQ(a.set(0, request(0.5, 100, 100, 10)).status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(a.support(1).ok()) << a.support(1).message();
  ASSERT_TRUE(a.save().ok());
  EXPECT_FALSE(a.has_saved(0));  // nothing to save on the H100
  EXPECT_TRUE(a.has_saved(1));
}

TEST_F(PowerSmoothingTest, ADriverWithoutTheSymbolsIsNotSupported) {
  auto opened = open("profile 0 b200\n", FAKE_NVML_OLD_LIBRARY);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(opened.status().message(), "nvmlDevicePowerSmoothingSetState"))
      << opened.status().message();
  EXPECT_TRUE(contains(opened.status().message(), "R570")) << opened.status().message();
}

TEST_F(PowerSmoothingTest, WritesRefusedByTheDevice) {
  auto opened = open(
      "gpus 2\nprofile * b200\nwrites 1 not_supported\n"
      "fail nvmlDevicePowerSmoothingUpdatePresetProfileParam no_permission gpu=0\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto r = opened.value()->set(0, request(0.5, 100, 100, 10));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(r.status().message(),
                       "nvmlDevicePowerSmoothingUpdatePresetProfileParam(profile 0, "
                       "PERCENT_TMP_FLOOR) (GPU 0)"))
      << r.status().message();
  EXPECT_TRUE(contains(r.status().message(), "need root")) << r.status().message();
  auto n = opened.value()->set(1, request(0.5, 100, 100, 10));
  EXPECT_EQ(n.status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(n.status().message(), "NVIDIA B200")) << n.status().message();
}

// The fake's `writes root` (NVIDIA: root/admin permissions) for a process that is not root:
// as root, the check runs in a child that drops to nobody.
TEST_F(PowerSmoothingTest, NotRootIsNoPermission) {
  script("profile 0 b200\n");
  auto attempt = []() -> StatusCode {
    auto lib = nvml::NvmlLibrary::load_path(FAKE_NVML_LIBRARY);
    if (!lib.ok()) return StatusCode::kInternal;
    auto a = NvmlPowerSmoothingActuator::open(std::move(lib).value());
    if (!a.ok() || !a.value()->read(0).ok()) return StatusCode::kInternal;  // reads need no root
    return a.value()->set(0, request(0.5, 100, 100, 10)).status().code();
  };
  if (::geteuid() != 0) {
    EXPECT_EQ(attempt(), StatusCode::kPermissionDenied);
    return;
  }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const bool dropped = ::setgroups(0, nullptr) == 0 && ::setgid(65534) == 0 &&
                         ::setuid(65534) == 0 && ::geteuid() != 0;
    ::_exit(dropped ? static_cast<int>(attempt()) : 100);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus));
  ASSERT_NE(WEXITSTATUS(wstatus), 100) << "could not drop to uid 65534";
  EXPECT_EQ(WEXITSTATUS(wstatus), static_cast<int>(StatusCode::kPermissionDenied));
}

TEST_F(PowerSmoothingTest, RestoreWritesBackTheSettingsFoundBeforeTheFirstWrite) {
  auto opened = open(
      "profile 0 b200\n"
      "smoothing 0 yes enabled=1 active=2 profile=2 floor_pct=30 up_w_per_s=400 "
      "down_w_per_s=200 hyst_ms=500\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerSmoothingActuator& a = *opened.value();
  EXPECT_EQ(a.restore().code(), StatusCode::kInvalidArgument);  // nothing saved yet
  auto w = a.set(0, request(0.6, 50, 25, 0, false));
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->settings.profile, 2);  // written into the active profile
  ASSERT_TRUE(a.has_saved(0));
  const PowerSmoothingSettings& s = a.saved().at(0);
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.profile, 2);
  EXPECT_DOUBLE_EQ(s.floor_frac_of_tdp, 0.3);
  ASSERT_TRUE(a.set(0, request(0.7, 60, 30, 5)).ok());  // a second write keeps the first record
  EXPECT_DOUBLE_EQ(a.saved().at(0).floor_frac_of_tdp, 0.3);

  ASSERT_TRUE(a.restore().ok());
  auto r = a.read(0);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->settings.enabled);
  EXPECT_EQ(r->settings.profile, 2);
  EXPECT_DOUBLE_EQ(r->settings.floor_frac_of_tdp, 0.3);
  EXPECT_NEAR(r->settings.ramp_up_w_per_s, 400, 1e-9);
  EXPECT_NEAR(r->settings.ramp_down_w_per_s, 200, 1e-9);
  EXPECT_DOUBLE_EQ(r->settings.ramp_down_hysteresis_ms, 500);
}

TEST_F(PowerSmoothingTest, SettingsPersistAcrossAReopenAndKeepTheCapLines) {
  setenv("FAKE_NVML_STATE", (dir_ / "state.txt").c_str(), 1);
  const std::string text = "gpus 2\nprofile * b200\n";
  {
    auto opened = open(text);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    ASSERT_TRUE(opened.value()->set(1, request(0.25, 321, 123, 750)).ok());
  }  // the library is shut down and unloaded: a new process, as far as the fake can tell
  const std::string state = read_all(dir_ / "state.txt");
  EXPECT_EQ(
      state.rfind("0 1000\n1 1000\n1 smoothing 1 0\n1 smoothing_profile 0 25 321 123 750\n", 0), 0u)
      << state;
  EXPECT_FALSE(contains(state, "0 smoothing")) << state;  // GPU 0 was never set
  auto again = open(text);
  ASSERT_TRUE(again.ok()) << again.status().message();
  auto r = again.value()->read(1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->settings.enabled);
  EXPECT_DOUBLE_EQ(r->settings.floor_frac_of_tdp, 0.25);
  EXPECT_NEAR(r->settings.ramp_up_w_per_s, 321, 1e-9);
  EXPECT_NEAR(r->settings.ramp_down_w_per_s, 123, 1e-9);
  EXPECT_DOUBLE_EQ(r->settings.ramp_down_hysteresis_ms, 750);
  auto untouched = again.value()->read(0);
  ASSERT_TRUE(untouched.ok());
  EXPECT_FALSE(untouched->settings.enabled);
}

// changed() names the GPUs whose settings may differ from the saved ones: written by set(), or
// kept from a dead run by save_with(); restore(gpus) writes back those only and clears them.
TEST_F(PowerSmoothingTest, ChangedGpusAreTheOnesRestoreWritesBack) {
  auto opened = open("gpus 3\nprofile * b200\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerSmoothingActuator& a = *opened.value();
  PowerSmoothingSettings kept;
  kept.enabled = true;
  kept.profile = 3;
  kept.floor_frac_of_tdp = 0.5;
  kept.ramp_up_w_per_s = kept.ramp_down_w_per_s = 60;
  kept.ramp_down_hysteresis_ms = 10;
  ASSERT_TRUE(a.save_with({{2, kept, ""}}).ok());
  EXPECT_EQ(a.saved().size(), 3u);
  EXPECT_EQ(a.changed(), (std::set<int>{2}));
  ASSERT_TRUE(a.set(0, request(0.6, 10, 20, 0)).ok());
  EXPECT_EQ(a.changed(), (std::set<int>{0, 2}));
  ASSERT_TRUE(a.restore({2}).ok());
  EXPECT_EQ(a.changed(), (std::set<int>{0}));
  auto r2 = a.read(2);
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->settings.profile, 3);  // the kept profile made active again
  EXPECT_DOUBLE_EQ(r2->settings.floor_frac_of_tdp, 0.5);
  ASSERT_TRUE(a.restore({0}).ok());
  EXPECT_TRUE(a.changed().empty());
  EXPECT_DOUBLE_EQ(a.read(0)->settings.floor_frac_of_tdp, 0.2);  // the fake's placeholder
  // Refused before anything is recorded or written.
  EXPECT_EQ(a.restore({7}).code(), StatusCode::kInvalidArgument);
  kept.ramp_up_w_per_s = -1;
  EXPECT_EQ(a.save_with({{1, kept, ""}}).code(), StatusCode::kInvalidArgument);
  kept.ramp_up_w_per_s = 1;
  EXPECT_EQ(a.save_with({{1, kept, ""}, {1, kept, ""}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.save_with({{9, kept, ""}}).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(a.changed().empty());
}

}  // namespace
}  // namespace fw

// PowerCapActuator: validation and save/restore on the in-memory fake, and the NVML
// implementation against the fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml).

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "actuation/fake_power_cap_actuator.hpp"
#include "actuation/nvml_power_cap_actuator.hpp"
#include "telemetry/nvml_source.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

#ifndef FAKE_NVML_LIBRARY
#define FAKE_NVML_LIBRARY FLEXWATT_BINARY_DIR "/tests/telemetry/fake_nvml/libnvidia-ml.so.1"
#endif

namespace fw {
namespace {

namespace fs = std::filesystem;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

FakePowerCapActuator two_fake_gpus() {
  return FakePowerCapActuator({{0, {200, 700, 700}, 550}, {1, {200, 700, 700}, 600}});
}

TEST(FakePowerCapActuator, SetValidatesAgainstConstraintsWithoutClamping) {
  FakePowerCapActuator a = two_fake_gpus();
  auto w = a.set(0, 450);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->cap_w, 450);
  EXPECT_EQ(w->enforced_w, 450);
  EXPECT_EQ(*a.cap_w(0), 450);
  EXPECT_TRUE(a.set(0, 200).ok());  // the bounds themselves are allowed
  EXPECT_TRUE(a.set(0, 700).ok());
  EXPECT_EQ(a.writes(), 3);
  for (double bad : {199.9, 700.1, std::nan(""), HUGE_VAL, -5.0}) {
    auto r = a.set(0, bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(a.set(5, 300).status().code(), StatusCode::kInvalidArgument);  // not managed
  EXPECT_EQ(a.writes(), 3);  // nothing refused was written
  EXPECT_EQ(*a.cap_w(0), 700);
}

TEST(FakePowerCapActuator, NoConstraintsIsNotSupported) {
  FakePowerCapActuator a({{0, {}, 300}});
  EXPECT_EQ(a.set(0, 300).status().code(), StatusCode::kNotSupported);
}

TEST(FakePowerCapActuator, RestorePutsBackTheCapsFoundNotTheDefaults) {
  FakePowerCapActuator a = two_fake_gpus();
  EXPECT_EQ(a.restore().code(), StatusCode::kInvalidArgument);  // nothing saved yet
  ASSERT_TRUE(a.save().ok());
  ASSERT_EQ(a.saved().size(), 2u);
  EXPECT_EQ(a.saved()[1].gpu, 1);
  EXPECT_EQ(a.saved()[1].cap_w, 600);
  ASSERT_TRUE(a.set(0, 300).ok());
  ASSERT_TRUE(a.set(1, 250).ok());
  ASSERT_TRUE(a.restore().ok());
  EXPECT_EQ(*a.cap_w(0), 550);  // found at start; the default is 700
  EXPECT_EQ(*a.cap_w(1), 600);
}

TEST(FakePowerCapActuator, RestoreTriesEveryGpuAndReportsTheFirstFailure) {
  FakePowerCapActuator a = two_fake_gpus();
  ASSERT_TRUE(a.save().ok());
  ASSERT_TRUE(a.set(1, 250).ok());
  a.fail_writes(Status::PermissionDenied("no"));
  const Status st = a.restore();
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(st.message(), "restore caps")) << st.message();
  a.fail_writes(Status::Ok());
  EXPECT_TRUE(a.restore().ok());
  EXPECT_EQ(*a.cap_w(1), 600);
}

TEST(FakePowerCapActuator, ClampShowsInTheReadBack) {
  FakePowerCapActuator a = two_fake_gpus();
  a.gpu(1).clamp_w = 400;
  auto w = a.set(1, 500);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->cap_w, 500);
  EXPECT_EQ(w->enforced_w, 400);
}

// Issue 44: every failed set() is counted on its GPU (the agent's
// flexwatt_gpu_cap_write_failures_total); a GPU not managed has no count.
TEST(FakePowerCapActuator, FailedSetsAreCountedPerGpu) {
  FakePowerCapActuator a = two_fake_gpus();
  EXPECT_TRUE(a.set(0, 300).ok());
  EXPECT_EQ(a.write_failures(0), 0);
  a.fail_writes(Status::PermissionDenied("no permission"));
  EXPECT_FALSE(a.set(0, 300).ok());
  EXPECT_FALSE(a.set(0, 900).ok());  // refused before the device: counted too
  a.fail_writes(Status::Ok());
  EXPECT_TRUE(a.set(0, 300).ok());
  EXPECT_FALSE(a.set(5, 300).ok());
  EXPECT_EQ(a.write_failures(0), 2);
  EXPECT_EQ(a.write_failures(1), 0);
  EXPECT_EQ(a.write_failures(5), 0);
  EXPECT_EQ(a.persistence_mode(0), PersistenceMode::kUnknown);  // in memory: nothing to say
}

class NvmlActuatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fw_act_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_SCRIPT");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Result<std::unique_ptr<NvmlPowerCapActuator>> open(const std::string& text,
                                                     const std::vector<int>& gpus = {}) {
    const fs::path p = dir_ / "script.txt";
    std::ofstream(p) << text;
    setenv("FAKE_NVML_SCRIPT", p.c_str(), 1);
    auto lib = nvml::NvmlLibrary::load_path(FAKE_NVML_LIBRARY);
    if (!lib.ok()) return lib.status();
    return NvmlPowerCapActuator::open(std::move(lib).value(), gpus);
  }
  fs::path dir_;
};

TEST_F(NvmlActuatorTest, ConstraintsInWatts) {
  auto a = open("gpus 2\nlimits 1 min=150.5 max=650 default=600 enforced=600\n");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_EQ(a.value()->gpus(), (std::vector<int>{0, 1}));
  const CapConstraints c = a.value()->constraints(1);
  EXPECT_DOUBLE_EQ(c.min_w, 150.5);
  EXPECT_DOUBLE_EQ(c.max_w, 650);
  EXPECT_DOUBLE_EQ(c.default_w, 600);
}

TEST_F(NvmlActuatorTest, SaveWriteRestoreReturnsTheCapsFound) {
  // Caps found at start (450, 500) differ from the driver's default (700).
  auto opened = open(
      "gpus 2\nlimits * min=200 max=700 default=700\nlimits 0 enforced=450\n"
      "limits 1 enforced=500\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerCapActuator& a = *opened.value();
  ASSERT_TRUE(a.save().ok());
  EXPECT_DOUBLE_EQ(a.saved()[0].cap_w, 450);
  EXPECT_DOUBLE_EQ(a.saved()[1].cap_w, 500);
  auto w = a.set(0, 333.3);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_DOUBLE_EQ(w->cap_w, 333.3);
  EXPECT_DOUBLE_EQ(w->enforced_w, 333.3);
  ASSERT_TRUE(a.set(1, 200).ok());
  EXPECT_DOUBLE_EQ(*a.cap_w(0), 333.3);
  ASSERT_TRUE(a.restore().ok());
  EXPECT_DOUBLE_EQ(*a.cap_w(0), 450);
  EXPECT_DOUBLE_EQ(*a.cap_w(1), 500);
}

TEST_F(NvmlActuatorTest, SaveReadsTheManagementLimitNotTheClampedEnforcedOne) {
  // Another agent holds GPU 0 at 400 W; the cap set on it is 600 W.
  auto opened = open("limits 0 min=200 max=700 limit=600 enforced=400 clamp=400\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerCapActuator& a = *opened.value();
  ASSERT_TRUE(a.save().ok());
  EXPECT_DOUBLE_EQ(a.saved()[0].cap_w, 600);
  auto w = a.set(0, 500);
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(w->enforced_w, 400);  // the read-back says who wins
  ASSERT_TRUE(a.restore().ok());
  EXPECT_DOUBLE_EQ(*a.cap_w(0), 600);
}

TEST_F(NvmlActuatorTest, OutOfRangeIsRefusedBeforeNvml) {
  // The write call would fail with a recognisable code if it were reached.
  auto opened = open("limits * min=200 max=700\nfail nvmlDeviceSetPowerManagementLimit unknown\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerCapActuator& a = *opened.value();
  for (double bad : {150.0, 900.0, std::nan(""), -5.0}) {
    auto r = a.set(0, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad << r.status().message();
  }
  EXPECT_EQ(a.set(3, 300).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a.set(0, 300).status().code(), StatusCode::kInternal);  // in range: NVML reached
}

TEST_F(NvmlActuatorTest, WriteWithoutPermissionNamesCallAndGpu) {
  auto opened = open("gpus 2\nfail nvmlDeviceSetPowerManagementLimit no_permission\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  auto w = opened.value()->set(1, 500);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(w.status().message(), "nvmlDeviceSetPowerManagementLimit (GPU 1)"))
      << w.status().message();
}

TEST_F(NvmlActuatorTest, FailedWritesAreCountedPerGpu) {
  auto opened = open("gpus 2\nfail nvmlDeviceSetPowerManagementLimit unknown gpu=1 after=1\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  NvmlPowerCapActuator& a = *opened.value();
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(a.set(0, 300).ok());
    EXPECT_EQ(a.set(1, 300).ok(), i == 0);
  }
  EXPECT_EQ(a.write_failures(0), 0);
  EXPECT_EQ(a.write_failures(1), 2);
}

// nvmlDeviceGetPersistenceMode is read once at open, never set; a GPU that does not answer is
// kUnknown, not an open error.
TEST_F(NvmlActuatorTest, PersistenceModeIsReadAtOpen) {
  auto opened =
      open("gpus 3\npersistence 1 off\nfail nvmlDeviceGetPersistenceMode not_supported gpu=2\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(opened.value()->persistence_mode(0), PersistenceMode::kOn);
  EXPECT_EQ(opened.value()->persistence_mode(1), PersistenceMode::kOff);
  EXPECT_EQ(opened.value()->persistence_mode(2), PersistenceMode::kUnknown);
}

TEST_F(NvmlActuatorTest, NoConstraintsIsNotSupported) {
  auto opened = open("fail nvmlDeviceGetPowerManagementLimitConstraints not_supported\n");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(opened.value()->set(0, 300).status().code(), StatusCode::kNotSupported);
}

TEST_F(NvmlActuatorTest, SharesTheLibraryWithTheReadOnlySource) {
  const fs::path p = dir_ / "script.txt";
  std::ofstream(p) << "gpus 2\nlimits * min=200 max=700 enforced=700\n";
  setenv("FAKE_NVML_SCRIPT", p.c_str(), 1);
  auto loaded = nvml::NvmlLibrary::load_path(FAKE_NVML_LIBRARY);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  std::shared_ptr<const nvml::NvmlLibrary> lib = std::move(loaded).value();
  auto src = NvmlGpuSource::open(lib);
  auto act = NvmlPowerCapActuator::open(lib, {1});
  ASSERT_TRUE(src.ok() && act.ok());
  ASSERT_TRUE(act.value()->set(1, 420).ok());
  GpuSample g;
  ASSERT_TRUE(src.value()->read(1, 0.0, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.cap_w, 420);
}

TEST_F(NvmlActuatorTest, SubsetAndUnknownIndex) {
  auto opened = open("gpus 3\n", {2});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(opened.value()->gpus(), (std::vector<int>{2}));
  EXPECT_FALSE(opened.value()->managed(0));
  auto bad = open("gpus 2\n", {4});
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  // The same message as the telemetry source's (one GPU selection, nvml::NvmlLibrary::select_gpus).
  EXPECT_NE(bad.status().message().find("unknown GPU index 4: NVML reports "), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find(" GPU(s), indices 0-"), std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace fw

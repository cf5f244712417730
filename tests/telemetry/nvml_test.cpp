// The NVML binding against the fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml), loaded
// through the real dlopen path.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "nvml/nvml_library.hpp"
#include "telemetry/nvml_source.hpp"
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

class NvmlFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fw_nvml_" + std::string(info->name()) + "_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    setenv(nvml::kNvmlLibraryEnv, FAKE_NVML_LIBRARY, 1);
  }
  void TearDown() override {
    unsetenv(nvml::kNvmlLibraryEnv);
    unsetenv("FAKE_NVML_SCRIPT");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void script(const std::string& text) {
    const fs::path p = dir_ / "script.txt";
    std::ofstream(p) << text;
    setenv("FAKE_NVML_SCRIPT", p.c_str(), 1);
  }

  // Loads the library named in FLEXWATT_NVML_LIBRARY and opens the source.
  Result<std::unique_ptr<NvmlGpuSource>> open(const std::string& text) {
    script(text);
    auto lib = nvml::NvmlLibrary::load();
    if (!lib.ok()) return lib.status();
    return NvmlGpuSource::open(std::move(lib).value());
  }

  fs::path dir_;
};

TEST_F(NvmlFakeTest, ReadingsAreConvertedToSiUnits) {
  auto src = open(
      "gpus 2\n"
      "name 0 Fake H100 80GB HBM3\n"
      "power 0 350.5\n"
      "energy 0 counter start_j=5000 step_j=10\n"
      "limits 0 min=200 max=700 default=700 enforced=650\n"
      "util 0 sm=87 mem=43\n"
      "clock 0 1755\n"
      "temp 0 71\n"
      "reasons 0 0x4\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  NvmlGpuSource& s = *src.value();
  EXPECT_EQ(s.library().path(), FAKE_NVML_LIBRARY);
  ASSERT_EQ(s.device_count(), 2);
  const GpuDeviceInfo& info = s.info(0);
  EXPECT_EQ(info.name, "Fake H100 80GB HBM3");
  EXPECT_EQ(info.power_source, PowerSource::kPowerUsage);
  EXPECT_TRUE(info.has_instant);
  EXPECT_EQ(info.energy_source, EnergySource::kCounter);
  EXPECT_DOUBLE_EQ(info.min_limit_w, 200.0);
  EXPECT_DOUBLE_EQ(info.max_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(info.default_limit_w, 700.0);
  EXPECT_TRUE(info.unsupported.empty());

  GpuSample g;
  ASSERT_TRUE(s.read(0, 0.0, g).ok());
  EXPECT_EQ(g.reading.gpu, 0);
  EXPECT_DOUBLE_EQ(g.reading.power_w, 350.5);  // 350500 mW
  EXPECT_DOUBLE_EQ(g.reading.power_instant_w, 350.5);
  EXPECT_DOUBLE_EQ(g.reading.energy_j, 5020.0);  // third counter read (two at open), mJ
  EXPECT_DOUBLE_EQ(g.reading.cap_w, 650.0);
  EXPECT_DOUBLE_EQ(g.reading.sm_util, 0.87);
  EXPECT_DOUBLE_EQ(g.reading.mem_util, 0.43);
  EXPECT_DOUBLE_EQ(g.reading.sm_clock_mhz, 1755.0);
  EXPECT_DOUBLE_EQ(g.reading.temp_c, 71.0);
  EXPECT_TRUE(g.has_clock_event_reasons);
  EXPECT_EQ(g.clock_event_reasons, 4u);
  ASSERT_TRUE(s.read(0, 0.5, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.energy_j, 5030.0);
}

TEST_F(NvmlFakeTest, PowerSequenceAdvancesOnePerRead) {
  auto src = open("power 0 100 200 300\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  GpuSample g;
  std::vector<double> seen;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(src.value()->read(0, i * 0.1, g).ok());
    seen.push_back(g.reading.power_w);
  }
  // The probe at open took the first value.
  EXPECT_EQ(seen, (std::vector<double>{200, 300, 100, 200}));
}

// power_w is the averaged reading (field 185, else PowerUsage, else field 186), what the
// simulator gives each GPU model; field 186 is read as power_instant_w where it answers.
TEST_F(NvmlFakeTest, PowerSourcePrefersAverageFieldThenPowerUsageThenInstantField) {
  auto src = open(
      "gpus 3\nfield_average 0 yes\nfield_instant 1 no\npower * 412.25\n"
      "fail nvmlDeviceGetPowerUsage not_supported gpu=2\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(0).power_source, PowerSource::kAverageField);
  EXPECT_EQ(src.value()->info(0).power_averaging, PowerAveraging::kAvg1s);
  EXPECT_EQ(src.value()->info(1).power_source, PowerSource::kPowerUsage);
  EXPECT_EQ(src.value()->info(2).power_source, PowerSource::kInstantField);
  EXPECT_EQ(src.value()->info(2).power_averaging, PowerAveraging::kInstant);
  GpuSample g;
  ASSERT_TRUE(src.value()->read(1, 0.0, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.power_w, 412.25);
  EXPECT_TRUE(std::isnan(g.reading.power_instant_w));
  ASSERT_TRUE(src.value()->read(0, 0.0, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.power_w, 412.25);
  EXPECT_DOUBLE_EQ(g.reading.power_instant_w, 412.25);
}

// The GPU profiles behave as NVIDIA documents nvmlDeviceGetPowerUsage: on an H100 the
// averaged readings (field 185) are a 1 s trailing mean of a fast periodic load and field 186
// follows it instant by instant; the energy counter's rate is the load's mean. On an A100
// (GA100) PowerUsage is instantaneous and field 185 is not supported. Real time: ~1.6 s.
TEST_F(NvmlFakeTest, GpuProfilesAverageAsNvidiaDocuments) {
  auto src = open(
      "gpus 2\nprofile 0 h100\nprofile 1 a100\n"
      "load * period_s=0.1 high_w=380 low_w=120 duty=0.5\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  NvmlGpuSource& s = *src.value();
  EXPECT_EQ(s.info(0).power_source, PowerSource::kAverageField);
  EXPECT_EQ(s.info(0).power_averaging, PowerAveraging::kAvg1s);
  EXPECT_EQ(s.info(1).power_source, PowerSource::kPowerUsage);
  EXPECT_EQ(s.info(1).power_averaging, PowerAveraging::kInstant);  // GA100, from the catalog
  ::usleep(1'100'000);  // a full second of history for the average
  GpuSample g;
  ASSERT_TRUE(s.read(0, 0.0, g).ok());
  const double e0 = g.reading.energy_j;
  double avg_min = 1e9, avg_max = 0, inst_min = 1e9, inst_max = 0, a100_min = 1e9, a100_max = 0;
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(s.read(0, 0.0, g).ok());
    avg_min = std::min(avg_min, g.reading.power_w);
    avg_max = std::max(avg_max, g.reading.power_w);
    inst_min = std::min(inst_min, g.reading.power_instant_w);
    inst_max = std::max(inst_max, g.reading.power_instant_w);
    GpuSample a;
    ASSERT_TRUE(s.read(1, 0.0, a).ok());
    a100_min = std::min(a100_min, a.reading.power_w);
    a100_max = std::max(a100_max, a.reading.power_w);
    ::usleep(17'000);
  }
  ASSERT_TRUE(s.read(0, 0.0, g).ok());
  EXPECT_GT(avg_min, 250 - 15);  // mean 250 W; a partial period moves it by <= 13 W
  EXPECT_LT(avg_max, 250 + 15);
  EXPECT_EQ(inst_min, 120);
  EXPECT_EQ(inst_max, 380);
  EXPECT_EQ(a100_min, 120);
  EXPECT_EQ(a100_max, 380);
  EXPECT_GT(g.reading.energy_j - e0, 0.0);
}

TEST_F(NvmlFakeTest, GpuLostInAnEarlierProcessIsSkippedAtOpen) {
  std::ofstream(dir_ / "state.txt") << "1 lost\n";
  setenv("FAKE_NVML_STATE", (dir_ / "state.txt").c_str(), 1);
  auto src = open("gpus 3\n");
  unsetenv("FAKE_NVML_STATE");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_TRUE(src.value()->probed(0));
  EXPECT_FALSE(src.value()->probed(1));
  EXPECT_TRUE(src.value()->probed(2));
  ASSERT_EQ(src.value()->lost().size(), 1u);
  EXPECT_EQ(src.value()->lost()[0].gpu, 1);
  EXPECT_TRUE(contains(src.value()->lost()[0].reason, "NVML_ERROR_GPU_IS_LOST"));
}

// NVML's index order may change between boots; the UUID stays with the GPU.
TEST_F(NvmlFakeTest, IndexOrderChangesUuidsStay) {
  auto src = open("gpus 3\norder 2 0 1\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(0).uuid, "GPU-fa4e0000-0000-4000-8000-000000000002");
  EXPECT_EQ(src.value()->info(1).uuid, "GPU-fa4e0000-0000-4000-8000-000000000000");
}

TEST_F(NvmlFakeTest, OldDriverUsesUnversionedSymbolsAndFallbacks) {
  setenv(nvml::kNvmlLibraryEnv, FAKE_NVML_OLD_LIBRARY, 1);
  auto src = open("power 0 250\nreasons 0 0x8\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  const nvml::NvmlLibrary& lib = src.value()->library();
  EXPECT_EQ(lib.init_symbol(), "nvmlInit");
  EXPECT_EQ(lib.clock_reasons_symbol(), "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(lib.fn().device_get_field_values, nullptr);
  EXPECT_EQ(src.value()->info(0).power_source, PowerSource::kPowerUsage);
  GpuSample g;
  ASSERT_TRUE(src.value()->read(0, 0.0, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.power_w, 250.0);
  EXPECT_EQ(g.clock_event_reasons, 8u);
}

TEST_F(NvmlFakeTest, UuidWhereTheLibraryHasTheCallEmptyWhereNot) {
  auto src = open("gpus 2\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(1).uuid, "GPU-fa4e0000-0000-4000-8000-000000000001");
  setenv(nvml::kNvmlLibraryEnv, FAKE_NVML_OLD_LIBRARY, 1);  // no nvmlDeviceGetUUID: left empty
  auto old = open("");
  ASSERT_TRUE(old.ok()) << old.status().message();
  EXPECT_EQ(old.value()->library().fn().device_get_uuid, nullptr);
  EXPECT_EQ(old.value()->info(0).uuid, "");
}

TEST_F(NvmlFakeTest, CurrentDriverBindsVersionedSymbols) {
  auto src = open("");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->library().init_symbol(), "nvmlInit_v2");
  EXPECT_EQ(src.value()->library().clock_reasons_symbol(),
            "nvmlDeviceGetCurrentClocksEventReasons");
}

TEST_F(NvmlFakeTest, MissingEnergyCounterIsIntegratedFromPower) {
  auto src = open("energy 0 none\npower 0 100 300\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(0).energy_source, EnergySource::kIntegrated);
  GpuSample g;
  // Probe took 100 W; reads see 300, 100, 300 W.
  ASSERT_TRUE(src.value()->read(0, 1.0, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.energy_j, 0.0);
  ASSERT_TRUE(src.value()->read(0, 1.5, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.energy_j, 0.5 * (300 + 100) * 0.5);
  ASSERT_TRUE(src.value()->read(0, 2.5, g).ok());
  EXPECT_DOUBLE_EQ(g.reading.energy_j, 100.0 + 0.5 * (100 + 300) * 1.0);
}

TEST_F(NvmlFakeTest, CounterGoingBackwardsAtOpenIsNotTrusted) {
  auto src = open("energy 0 backwards start_j=1000 step_j=1\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(0).energy_source, EnergySource::kIntegrated);
}

TEST_F(NvmlFakeTest, GpuLostMidRunNamesCallAndGpu) {
  auto src = open("gpus 2\nlost 1 after_reads=3\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  GpuSample g;
  ASSERT_TRUE(src.value()->read(1, 0.0, g).ok());  // read 2 (the probe was read 1)
  ASSERT_TRUE(src.value()->read(1, 0.1, g).ok());  // read 3
  const Status st = src.value()->read(1, 0.2, g);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(st.message(), "nvmlDeviceGetPowerUsage")) << st.message();
  EXPECT_TRUE(contains(st.message(), "(GPU 1)")) << st.message();
  EXPECT_TRUE(contains(st.message(), "NVML_ERROR_GPU_IS_LOST")) << st.message();
  EXPECT_TRUE(src.value()->read(0, 0.2, g).ok());  // the other GPU is fine
}

// A GPU lost at open is skipped (the others open); every selected GPU lost fails open.
TEST_F(NvmlFakeTest, GpuLostAtOpenIsSkippedOthersOpen) {
  {
    auto src = open("gpus 3\nfail nvmlDeviceGetName gpu_lost gpu=2\n");
    ASSERT_TRUE(src.ok()) << src.status().message();
    EXPECT_TRUE(src.value()->probed(0));
    EXPECT_FALSE(src.value()->probed(2));
    ASSERT_EQ(src.value()->lost().size(), 1u);
    EXPECT_TRUE(contains(src.value()->lost()[0].reason, "nvmlDeviceGetName (GPU 2)"))
        << src.value()->lost()[0].reason;
  }  // shut down: the next open reads its own script
  auto all = open("gpus 1\nfail nvmlDeviceGetName gpu_lost\n");
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(all.status().message(), "every selected GPU is unreachable"))
      << all.status().message();
}

TEST_F(NvmlFakeTest, OnlySelectedGpusAreProbed) {
  script("gpus 3\nfail * gpu_lost gpu=2\n");  // GPU 2 is broken; we only want 0 and 1
  auto lib = nvml::NvmlLibrary::load();
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto src = NvmlGpuSource::open(std::move(lib).value(), {1, 0});
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->device_count(), 3);
  EXPECT_TRUE(src.value()->probed(0));
  EXPECT_TRUE(src.value()->probed(1));
  EXPECT_FALSE(src.value()->probed(2));
  GpuSample g;
  EXPECT_TRUE(src.value()->read(1, 0.0, g).ok());
  EXPECT_EQ(src.value()->read(2, 0.0, g).code(), StatusCode::kInvalidArgument);
}

TEST_F(NvmlFakeTest, UnknownGpuIndexNamesIndexAndCount) {
  script("gpus 2\n");
  auto lib = nvml::NvmlLibrary::load();
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  auto src = NvmlGpuSource::open(std::move(lib).value(), {0, 4});
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(src.status().message(), "unknown GPU index 4: NVML reports 2 GPU(s)"))
      << src.status().message();
}

TEST_F(NvmlFakeTest, RequiredPowerNotSupportedFailsOpen) {
  auto src = open(
      "gpus 2\nfield_instant 0 no\n"
      "fail nvmlDeviceGetPowerUsage not_supported gpu=0\n");
  ASSERT_FALSE(src.ok());
  EXPECT_EQ(src.status().code(), StatusCode::kNotSupported);
  EXPECT_TRUE(contains(src.status().message(), "nvmlDeviceGetPowerUsage (GPU 0)"))
      << src.status().message();
  EXPECT_TRUE(contains(src.status().message(), "NVML_ERROR_NOT_SUPPORTED"));
}

TEST_F(NvmlFakeTest, OptionalReadingNotSupportedAtOpenIsLeftNaN) {
  auto src = open("fail nvmlDeviceGetTemperature not_supported\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ(src.value()->info(0).unsupported, std::vector<std::string>{"nvmlDeviceGetTemperature"});
  GpuSample g;
  ASSERT_TRUE(src.value()->read(0, 0.0, g).ok());
  EXPECT_TRUE(std::isnan(g.reading.temp_c));
  EXPECT_FALSE(std::isnan(g.reading.sm_clock_mhz));
}

// An optional reading that fails mid-run (issue 44: it failed the whole node read, a permanent
// fallback) is left unset and named; the read succeeds and the next one has it again.
TEST_F(NvmlFakeTest, OptionalReadingFailingMidRunIsLeftUnsetAndNamed) {
  auto src = open(
      "gpus 2\nfail nvmlDeviceGetUtilizationRates not_supported gpu=1 after=1\n"
      "fail nvmlDeviceGetTemperature unknown gpu=1 after=1 times=1\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  GpuSample g;
  const Status st = src.value()->read(1, 0.0, g);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(std::isnan(g.reading.sm_util));
  EXPECT_TRUE(std::isnan(g.reading.temp_c));
  EXPECT_FALSE(std::isnan(g.reading.power_w));
  EXPECT_FALSE(std::isnan(g.reading.sm_clock_mhz));
  ASSERT_EQ(g.skipped.size(), 2u);
  EXPECT_TRUE(contains(g.skipped[0], "nvmlDeviceGetUtilizationRates (GPU 1)")) << g.skipped[0];
  EXPECT_TRUE(contains(g.skipped[1], "nvmlDeviceGetTemperature (GPU 1)")) << g.skipped[1];
  ASSERT_TRUE(src.value()->read(1, 0.5, g).ok());  // the one-off error has passed
  EXPECT_FALSE(std::isnan(g.reading.temp_c));
  EXPECT_EQ(g.skipped.size(), 1u);
}

// A lost GPU seen on an optional reading still fails the read (and names the call).
TEST_F(NvmlFakeTest, GpuLostOnAnOptionalReadingFailsTheRead) {
  auto src = open("fail nvmlDeviceGetClockInfo gpu_lost after=1\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  GpuSample g;
  const Status st = src.value()->read(0, 0.0, g);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "nvmlDeviceGetClockInfo (GPU 0)")) << st.message();
}

TEST_F(NvmlFakeTest, NoPermissionOnReadIsPermissionDenied) {
  auto src = open("fail nvmlDeviceGetEnforcedPowerLimit no_permission after=1\n");
  ASSERT_TRUE(src.ok()) << src.status().message();
  GpuSample g;
  const Status st = src.value()->read(0, 0.0, g);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(st.message(), "nvmlDeviceGetEnforcedPowerLimit (GPU 0)")) << st.message();
}

TEST_F(NvmlFakeTest, MissingLibraryIsUnavailableInOneLine) {
  setenv(nvml::kNvmlLibraryEnv, "/nonexistent/libnvidia-ml.so.1", 1);
  auto lib = nvml::NvmlLibrary::load();
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  const std::string& m = lib.status().message();
  EXPECT_TRUE(contains(m, "FLEXWATT_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1")) << m;
  EXPECT_FALSE(contains(m, "\n")) << m;
}

TEST_F(NvmlFakeTest, CudaStubIsRejected) {
  const fs::path stubs = dir_ / "cuda" / "lib64" / "stubs";
  fs::create_directories(stubs);
  fs::copy_file(FAKE_NVML_LIBRARY, stubs / "libnvidia-ml.so");
  auto lib = nvml::NvmlLibrary::load_path((stubs / "libnvidia-ml.so").string());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(lib.status().message(), "stub")) << lib.status().message();

  // A link elsewhere that resolves into stubs/ is rejected too.
  const fs::path link = dir_ / "libnvidia-ml.so.1";
  fs::create_symlink(stubs / "libnvidia-ml.so", link);
  lib = nvml::NvmlLibrary::load_path(link.string());
  ASSERT_FALSE(lib.ok());
  EXPECT_TRUE(contains(lib.status().message(), "stub")) << lib.status().message();
}

TEST_F(NvmlFakeTest, LibraryWithoutNvmlSymbolsIsRejected) {
  auto lib = nvml::NvmlLibrary::load_path("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(lib.status().message(), "not a usable NVML library"))
      << lib.status().message();
}

TEST_F(NvmlFakeTest, InitFailureNamesTheInitCall) {
  auto src = open("no_such_directive 0\n");  // the fake's nvmlInit fails on a bad script
  ASSERT_FALSE(src.ok());
  EXPECT_TRUE(contains(src.status().message(), "nvmlInit_v2")) << src.status().message();
  EXPECT_TRUE(contains(src.status().message(), "NVML_ERROR_UNKNOWN"));
}

TEST(NvmlCheckTest, MapsReturnCodesToStatusCodes) {
  EXPECT_EQ(nvml::nvml_status_code(nvml::kSuccess), StatusCode::kOk);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorGpuIsLost), StatusCode::kUnavailable);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorDriverNotLoaded), StatusCode::kUnavailable);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorResetRequired), StatusCode::kUnavailable);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorNotSupported), StatusCode::kNotSupported);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorFunctionNotFound), StatusCode::kNotSupported);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorNoPermission), StatusCode::kPermissionDenied);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorInvalidArgument), StatusCode::kInvalidArgument);
  EXPECT_EQ(nvml::nvml_status_code(nvml::kErrorUnknown), StatusCode::kInternal);
  EXPECT_EQ(nvml::nvml_return_name(nvml::kErrorGpuIsLost), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(nvml::nvml_return_name(12345), "NVML return code 12345");
}

}  // namespace
}  // namespace fw

#include "telemetry/gpu_source.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

// A scripted source: power = 100 * (gpu + 1) + now_s; GPU `fail_gpu` fails.
class ScriptedSource : public GpuTelemetrySource {
 public:
  explicit ScriptedSource(int n, int fail_gpu = -1) : infos_(n), fail_gpu_(fail_gpu) {}
  int device_count() const override { return static_cast<int>(infos_.size()); }
  const GpuDeviceInfo& info(int gpu) const override { return infos_[gpu]; }
  Status read(int gpu, double now_s, GpuSample& out) override {
    ++reads;
    if (gpu == fail_gpu_)
      return Status::Unavailable("scripted failure (GPU " + std::to_string(gpu) + ")");
    out = GpuSample{};
    out.reading.gpu = gpu;
    out.reading.power_w = 100.0 * (gpu + 1) + now_s;
    out.clock_event_reasons = uint64_t{1} << gpu;
    out.has_clock_event_reasons = true;
    return Status::Ok();
  }
  int reads = 0;

 private:
  std::vector<GpuDeviceInfo> infos_;
  int fail_gpu_;
};

TEST(ReadGpusTest, ReadsSelectedGpusInOrder) {
  ScriptedSource src(4);
  Snapshot snap;
  std::vector<uint64_t> seen(2, 0);
  ASSERT_TRUE(read_gpus(src, {3, 1}, 2.5, snap, &seen).ok());
  EXPECT_EQ(snap.time_s, 2.5);
  ASSERT_EQ(snap.gpus.size(), 2u);
  EXPECT_EQ(snap.gpus[0].gpu, 3);
  EXPECT_EQ(snap.gpus[0].power_w, 402.5);
  EXPECT_EQ(snap.gpus[1].gpu, 1);
  EXPECT_EQ(snap.gpus[1].power_w, 202.5);
  EXPECT_EQ(seen[0], 8u);
  EXPECT_EQ(seen[1], 2u);
}

TEST(ReadGpusTest, StopsAtFirstFailure) {
  ScriptedSource src(3, /*fail_gpu=*/1);
  Snapshot snap;
  const Status st = read_gpus(src, {0, 1, 2}, 0.0, snap);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("GPU 1"), std::string::npos);
  EXPECT_EQ(src.reads, 2);
}

TEST(SourceNamesTest, NamesAreStable) {
  EXPECT_EQ(power_source_name(PowerSource::kInstantField), "nvml_field_power_instant");
  EXPECT_EQ(power_source_name(PowerSource::kPowerUsage), "nvmlDeviceGetPowerUsage");
  EXPECT_EQ(energy_source_name(EnergySource::kCounter), "counter");
  EXPECT_EQ(energy_source_name(EnergySource::kIntegrated), "integrated");
}

}  // namespace
}  // namespace fw

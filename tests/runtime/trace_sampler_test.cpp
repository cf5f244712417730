// run_sampler on a scripted source and an injected clock: the rows, the meta, stops, failures.

#include "runtime/trace_sampler.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "telemetry/trace_reader.hpp"

namespace fw {
namespace {

namespace fs = std::filesystem;

class FakeClock : public Clock {
 public:
  double now_s() override { return now_; }
  void sleep_until_s(double t_s) override { now_ = std::max(now_, t_s); }
  double now_ = 50.0;
};

// power = 100 * (gpu + 1); GPU `fail_gpu` fails from read `fail_after` on.
class ScriptedSource : public GpuTelemetrySource {
 public:
  explicit ScriptedSource(int n) : infos_(n) {}
  int device_count() const override { return static_cast<int>(infos_.size()); }
  const GpuDeviceInfo& info(int gpu) const override { return infos_[gpu]; }
  Status read(int gpu, double now_s, GpuSample& out) override {
    if (gpu == fail_gpu && reads >= fail_after) return Status::Unavailable("GPU is lost");
    ++reads;
    out = GpuSample{};
    out.reading.gpu = gpu;
    out.reading.power_w = 100.0 * (gpu + 1);
    if (gpu == glitch_gpu && reads == glitch_read) out.reading.power_w = 4294967.295;
    if (gpu == glitch_gpu && reads == glitch_read + 2) out.reading.sm_util = 2.55;
    out.clock_event_reasons = uint64_t{4};
    out.has_clock_event_reasons = true;
    return Status::Ok();
  }
  std::vector<GpuDeviceInfo> infos_;
  int reads = 0, fail_gpu = -1, fail_after = 0;
  // A driver glitch on GPU glitch_gpu: an impossible power at read glitch_read (counted after
  // the increment), an impossible utilisation two reads later.
  int glitch_gpu = -1, glitch_read = 0;
};

class TraceSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("fw_sampler_" + std::string(info->name()) + "_" + std::to_string(getpid()));
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string read(const std::string& name) {
    std::ifstream f(dir_ / name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

TEST_F(TraceSamplerTest, TakesEveryTickAndWritesTheMeta) {
  ScriptedSource src(3);
  src.infos_[2].power_source = PowerSource::kInstantField;
  auto w = TraceWriter::create(dir_.string());
  ASSERT_TRUE(w.ok());
  FakeClock clock;
  SamplerRequest req;
  req.interval_s = 0.1;
  req.duration_s = 1.0;
  req.gpus = {2, 0};
  const SamplerResult r = run_sampler(src, *w.value(), req, clock, {});
  EXPECT_EQ(r.planned, 10);
  EXPECT_EQ(r.taken, 10);
  EXPECT_EQ(r.missed, 0);
  EXPECT_FALSE(r.interrupted);
  EXPECT_TRUE(r.read_status.ok());
  EXPECT_EQ(src.reads, 20);
  const nlohmann::json meta = sample_meta_json(src, req, r, "/lib/nvml.so");
  EXPECT_EQ(meta["samples"], 10);
  EXPECT_EQ(meta["ticks_planned"], 10);
  EXPECT_EQ(meta["power_source"], "mixed");
  EXPECT_EQ(meta["energy_source"], "integrated");
  EXPECT_EQ(meta["devices"][0]["gpu"], 2);
  EXPECT_EQ(meta["devices"][0]["clock_event_reasons_seen"], "0x4");
  EXPECT_EQ(meta["nvml_library"], "/lib/nvml.so");
  EXPECT_FALSE(meta.contains("error"));
  ASSERT_TRUE(w.value()->close(meta).ok());
  const std::string csv = read("gpus.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 21);  // header + 10 ticks x 2 GPUs
  EXPECT_NE(csv.find("\n0.9"), std::string::npos) << csv;   // the last tick at 0.9 s
}

TEST_F(TraceSamplerTest, ImplausibleReadingsAreLeftOutCountedAndTheTraceStaysReadable) {
  ScriptedSource src(2);
  src.glitch_gpu = 1;
  src.glitch_read = 4;  // tick 1's GPU 1 reports 4294967 W; tick 2's GPU 1 a utilisation 2.55
  auto w = TraceWriter::create(dir_.string());
  ASSERT_TRUE(w.ok());
  FakeClock clock;
  SamplerRequest req;
  req.interval_s = 0.5;
  req.duration_s = 2;
  req.gpus = {0, 1};
  const SamplerResult r = run_sampler(src, *w.value(), req, clock, {});
  EXPECT_EQ(r.taken, 4);
  EXPECT_EQ(r.implausible_rows, 1);
  EXPECT_EQ(r.implausible_fields, 1);
  ASSERT_TRUE(w.value()->close(sample_meta_json(src, req, r, "x")).ok());
  const nlohmann::json meta = nlohmann::json::parse(read("meta.json"));  // the writer's counts
  EXPECT_EQ(meta.value("implausible_rows", -1), 1);
  EXPECT_EQ(meta.value("implausible_fields", -1), 1);
  const std::string csv = read("gpus.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 8);  // header + 8 rows - 1 left out
  EXPECT_EQ(csv.find("4294967"), std::string::npos) << csv;
  auto reader = TraceReader::open(dir_.string());  // the readers accept what the sampler wrote
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  TraceRow row;
  int rows = 0;
  while ((*reader)->next(row)) ++rows;
  EXPECT_TRUE((*reader)->status().ok()) << (*reader)->status().message();
  EXPECT_EQ(rows, 7);
}

TEST_F(TraceSamplerTest, ReadFailureStopsAndIsReported) {
  ScriptedSource src(2);
  src.fail_gpu = 1;
  src.fail_after = 5;  // reads 0..4 succeed: ticks 0, 1 whole, tick 2 fails on GPU 1
  auto w = TraceWriter::create(dir_.string());
  ASSERT_TRUE(w.ok());
  FakeClock clock;
  SamplerRequest req;
  req.interval_s = 0.5;
  req.duration_s = 5;
  req.gpus = {0, 1};
  const SamplerResult r = run_sampler(src, *w.value(), req, clock, {});
  EXPECT_EQ(r.taken, 2);
  EXPECT_EQ(r.read_status.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(sample_meta_json(src, req, r, "x")["error"], "GPU is lost");
}

TEST_F(TraceSamplerTest, StopRequestInterrupts) {
  ScriptedSource src(1);
  auto w = TraceWriter::create(dir_.string());
  ASSERT_TRUE(w.ok());
  FakeClock clock;
  SamplerRequest req;
  req.interval_s = 1;
  req.duration_s = 100;
  req.gpus = {0};
  const SamplerResult r =
      run_sampler(src, *w.value(), req, clock, [&] { return clock.now_s() >= 53.5; });
  EXPECT_EQ(r.taken, 4);  // ticks at 0, 1, 2, 3 s after the start (clock 50..53)
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.planned, 100);
}

}  // namespace
}  // namespace fw

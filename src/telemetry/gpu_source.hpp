#pragma once
// GpuTelemetrySource: where per-GPU readings come from (NVML on a real node; fakes in tests).
// The sampler (cli/sample.cpp) depends only on this interface.
//
// Contract: device indices are 0..device_count()-1. read() is called with non-decreasing
// now_s (seconds on the caller's steady clock; the source never reads a clock itself) and fills
// every field it can; readings a device does not offer stay NaN. A failure names the call and
// the GPU. Not thread-safe.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

// Where GpuReading::power_w comes from: the device's averaged reading where it has one, the
// same signal the simulator gives each GPU model (hw/gpu_catalog power_avg_1s), so controllers
// see on hardware what they were trained and evaluated on. Instantaneous power, where the
// device has it, is GpuReading::power_instant_w (field 186).
enum class PowerSource {
  kAverageField,  // NVML field NVML_FI_DEV_POWER_AVERAGE (185): a 1 s trailing average
  kPowerUsage,    // nvmlDeviceGetPowerUsage (1 s average on Ampere other than GA100 and newer)
  kInstantField,  // NVML field NVML_FI_DEV_POWER_INSTANT (186), where neither above answers
  kOther,         // a non-NVML source (fakes)
};
// What averaging GpuReading::power_w carries.
enum class PowerAveraging { kUnknown, kInstant, kAvg1s };
std::string_view power_averaging_name(PowerAveraging a);  // "unknown" | "instant" | "avg_1s"
// Where GpuReading::energy_j comes from.
enum class EnergySource {
  kCounter,     // the device's total-energy counter (joules since driver load)
  kIntegrated,  // trapezoid integral of power_w over the read times, from 0 at the first read
};
std::string_view power_source_name(PowerSource s);
std::string_view energy_source_name(EnergySource s);

// What is known about a device once, at open.
struct GpuDeviceInfo {
  std::string name;
  std::string uuid;  // "GPU-…" from nvmlDeviceGetUUID; empty when the library or device lacks it
  PowerSource power_source = PowerSource::kPowerUsage;
  PowerAveraging power_averaging = PowerAveraging::kUnknown;
  bool has_instant = false;  // GpuReading::power_instant_w is read (field 186)
  EnergySource energy_source = EnergySource::kIntegrated;
  double min_limit_w = kUnset;  // settable power-limit range; NaN when the device does not say
  double max_limit_w = kUnset;
  double default_limit_w = kUnset;
  std::vector<std::string> unsupported;  // readings the device refused at open (call names)
};

struct GpuSample {
  GpuReading reading;
  uint64_t clock_event_reasons = 0;  // NVML clocks-event (throttle) reason bit mask
  bool has_clock_event_reasons = false;
  // Optional readings (utilisation, clock, temperature, clock-event reasons) that failed on this
  // read with an error other than a lost GPU: left unset (NaN) in `reading`, the read itself
  // succeeds; each entry names the call, the GPU and the error. Power and energy are required
  // and fail the read.
  std::vector<std::string> skipped;
};

class GpuTelemetrySource {
 public:
  virtual ~GpuTelemetrySource() = default;
  virtual int device_count() const = 0;
  // REQUIRES: 0 <= gpu < device_count().
  virtual const GpuDeviceInfo& info(int gpu) const = 0;
  // REQUIRES: 0 <= gpu < device_count(). out.reading.gpu is set to gpu.
  virtual Status read(int gpu, double now_s, GpuSample& out) = 0;
};

// Reads `gpus` (source indices) into snap.gpus, in that order, with snap.time_s = now_s.
// Each GPU's clock-event reasons are OR-ed into reasons_seen (same length as gpus) when given.
// Stops at the first failure.
Status read_gpus(GpuTelemetrySource& src, const std::vector<int>& gpus, double now_s,
                 Snapshot& snap, std::vector<uint64_t>* reasons_seen = nullptr);

}  // namespace fw

#include "telemetry/gpu_source.hpp"

namespace fw {

std::string_view power_source_name(PowerSource s) {
  switch (s) {
    case PowerSource::kAverageField:
      return "nvml_field_power_average";
    case PowerSource::kInstantField:
      return "nvml_field_power_instant";
    case PowerSource::kPowerUsage:
      return "nvmlDeviceGetPowerUsage";
    case PowerSource::kOther:
      break;
  }
  return "other";
}

std::string_view power_averaging_name(PowerAveraging a) {
  switch (a) {
    case PowerAveraging::kInstant:
      return "instant";
    case PowerAveraging::kAvg1s:
      return "avg_1s";
    case PowerAveraging::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view energy_source_name(EnergySource s) {
  return s == EnergySource::kCounter ? "counter" : "integrated";
}

Status read_gpus(GpuTelemetrySource& src, const std::vector<int>& gpus, double now_s,
                 Snapshot& snap, std::vector<uint64_t>* reasons_seen) {
  snap.time_s = now_s;
  snap.gpus.resize(gpus.size());
  GpuSample sample;
  for (size_t i = 0; i < gpus.size(); ++i) {
    FW_RETURN_IF_ERROR(src.read(gpus[i], now_s, sample));
    snap.gpus[i] = sample.reading;
    if (reasons_seen && i < reasons_seen->size() && sample.has_clock_event_reasons) {
      (*reasons_seen)[i] |= sample.clock_event_reasons;
    }
  }
  return Status::Ok();
}

}  // namespace fw

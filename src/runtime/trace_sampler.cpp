#include "runtime/trace_sampler.hpp"

#include <chrono>
#include <cstdio>

#include "core/format.hpp"
#include "core/version.hpp"
#include "runtime/tick_loop.hpp"
#include "runtime/tick_schedule.hpp"

namespace fw {
namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));  // NOLINT
  return buf;
}

}  // namespace

SamplerResult run_sampler(GpuTelemetrySource& src, TraceWriter& writer,
                          const SamplerRequest& request, Clock& clock,
                          std::function<bool()> stop_requested) {
  SamplerResult r;
  r.planned = TickSchedule::ticks_in(request.duration_s, request.interval_s);
  r.reasons_seen.assign(request.gpus.size(), 0);
  Snapshot snap;
  double next_progress_s = 1.0;
  r.start_unix_s = unix_now_s();
  TickLoop loop(clock, request.interval_s, r.planned, stop_requested);
  while (loop.wait_next()) {
    const double now_s = loop.tick_now_s();
    r.read_status = read_gpus(src, request.gpus, now_s, snap, &r.reasons_seen);
    if (!r.read_status.ok()) break;
    writer.append(snap);
    loop.complete();
    if (request.progress && now_s >= next_progress_s) {
      std::fprintf(stderr, "\rsample: %.1f/%.1f s, %lld ticks, %lld missed", now_s,
                   request.duration_s, static_cast<long long>(loop.taken()),  // NOLINT
                   static_cast<long long>(loop.missed()));                    // NOLINT
      next_progress_s = now_s + 1.0;
    }
  }
  r.implausible_rows = writer.implausible_rows();
  r.implausible_fields = writer.implausible_fields();
  r.interrupted = stop_requested && stop_requested() && r.read_status.ok();
  r.taken = loop.taken();
  r.missed = loop.missed();
  r.max_lateness_s = loop.max_lateness_s();
  if (request.progress) std::fprintf(stderr, "\n");
  return r;
}

SampleSources sample_sources(const GpuTelemetrySource& src, const std::vector<int>& gpus) {
  SampleSources s;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuDeviceInfo& info = src.info(gpus[i]);
    const std::string ps(power_source_name(info.power_source));
    const std::string es(energy_source_name(info.energy_source));
    s.power = (i == 0 || s.power == ps) ? ps : "mixed";
    s.energy = (i == 0 || s.energy == es) ? es : "mixed";
  }
  return s;
}

nlohmann::json sample_meta_json(const GpuTelemetrySource& src, const SamplerRequest& request,
                                const SamplerResult& result, const std::string& nvml_library) {
  const std::vector<int>& gpus = request.gpus;
  nlohmann::json devices = nlohmann::json::array();
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuDeviceInfo& info = src.info(gpus[i]);
    devices.push_back({{"gpu", gpus[i]},
                       {"name", info.name},
                       {"power_source", std::string(power_source_name(info.power_source))},
                       {"energy_source", std::string(energy_source_name(info.energy_source))},
                       {"power_limit_min_w", info.min_limit_w},
                       {"power_limit_max_w", info.max_limit_w},
                       {"power_limit_default_w", info.default_limit_w},
                       {"unsupported", info.unsupported},
                       {"clock_event_reasons_seen", hex(result.reasons_seen[i])}});
  }
  const SampleSources sources = sample_sources(src, gpus);
  nlohmann::json meta = {
      {"producer", "flexwatt sample"},
      {"flexwatt_version", kVersion},
      {"interval_s", request.interval_s},
      {"duration_s", request.duration_s},
      {"ticks_planned", result.planned},
      {"samples", result.taken},
      {"missed_ticks", result.missed},
      {"max_lateness_s", result.max_lateness_s},
      {"gpus", gpus},
      {"devices", devices},
      {"power_source", sources.power},
      {"energy_source", sources.energy},
      {"nvml_library", nvml_library},
      {"start_unix_s", result.start_unix_s},
      {"time_base", "time_s: seconds on a steady clock since the first deadline"},
      {"interrupted", result.interrupted},
  };
  if (!result.read_status.ok()) meta["error"] = result.read_status.message();
  return meta;
}

}  // namespace fw

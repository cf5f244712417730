#pragma once
// TraceSampler: reads GPUs on the wall-clock loop (tick_loop.hpp) and appends each tick to a
// trace; what `flexwatt sample` runs, and the pattern the node agent's loop follows.
//
// run_sampler() takes ticks until all planned ones are done, a stop is requested, or a read
// fails (then it stops at once: read_status says why; the rows read so far are in the
// writer). It never closes the writer: the caller writes meta.json (sample_meta_json) and
// closes it. Progress lines go to stderr when request.progress is set.

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/clock.hpp"
#include "telemetry/gpu_source.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw {

struct SamplerRequest {
  double interval_s = 0.5;  // > 0
  double duration_s = 60;   // >= interval_s
  std::vector<int> gpus;    // source indices, in trace order; non-empty
  bool progress = false;    // one-line progress on stderr (a terminal)
};

struct SamplerResult {
  int64_t planned = 0;  // TickSchedule::ticks_in(duration_s, interval_s)
  int64_t taken = 0;
  int64_t missed = 0;
  double max_lateness_s = 0;
  bool interrupted = false;            // stopped by a stop request, no read failure
  Status read_status;                  // the read failure that stopped the run, if any
  std::vector<uint64_t> reasons_seen;  // per request.gpus: OR of clock-event reasons
  double start_unix_s = 0;             // wall-clock time of the loop's start
  // Readings the writer left out as implausible (TraceWriter: a driver glitch): GPU rows
  // left out for their power, other fields written empty.
  int64_t implausible_rows = 0;
  int64_t implausible_fields = 0;
};

SamplerResult run_sampler(GpuTelemetrySource& src, TraceWriter& writer,
                          const SamplerRequest& request, Clock& clock,
                          std::function<bool()> stop_requested);

// Device power/energy source shared by all GPUs of the run, or "mixed".
struct SampleSources {
  std::string power, energy;
};
SampleSources sample_sources(const GpuTelemetrySource& src, const std::vector<int>& gpus);

// The meta.json of a sample run (producer "flexwatt sample"; devices, schedule figures, the
// NVML library path, "error" when a read failed).
nlohmann::json sample_meta_json(const GpuTelemetrySource& src, const SamplerRequest& request,
                                const SamplerResult& result, const std::string& nvml_library);

}  // namespace fw

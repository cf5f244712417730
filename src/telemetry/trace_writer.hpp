#pragma once
// Writes a trace directory (format in docs/telemetry.md "Trace format"):
//   gpus.csv  time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c
//   jobs.csv  time_s,job,phase,tokens_total,steps_total,<one column per knob>
// power_limit_w is the GPU's cap (the column keeps its name: file formats do not change);
// the knob columns are kActuatorTable's per-job rows by name, in table order
// (gen_concurrency,group_size).
//   meta.json whatever the producer records (scenario, seed, controller, versions)
// jobs.csv is written only when a snapshot carried jobs. Missing readings are written
// as empty cells. The directory is created if needed. Not thread-safe.
// The writer writes only what the trace readers accept: a reading outside their sane ranges
// (trace_reader.hpp; a driver glitch such as a 4294967 W power) is not written. A GPU whose
// power is implausible is left out of that tick (a gap the analysis bridges); any other
// implausible field is written empty. Both are counted and, when any, recorded in meta.json
// ("implausible_rows", "implausible_fields").
// Rows are buffered; they reach the files at close(), whenever 1 MiB is buffered, at flush(),
// and, with TraceWriterOptions::flush_every_s finite, once that much trace time (the snapshots'
// time_s) has passed since the last flush: one write(2) per file, never an fsync, so a producer
// killed with -9 leaves whole rows up to then. The clock is the trace's own time, read nowhere
// here: a real-time producer's time_s is wall time since its start.

#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/csv.hpp"
#include "core/status.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

inline constexpr const char* kGpusCsvHeader =
    "time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c";
// "time_s,job,phase,tokens_total,steps_total,gen_concurrency,group_size"
std::string jobs_csv_header();

struct TraceWriterOptions {
  // Flush once the snapshots' time_s has advanced this far (s) since the last flush, or gone
  // back (a new episode whose clock starts again); the first snapshot is flushed at once.
  // Infinity (the default): no such flush. Right for simulated runs, whose trace time runs
  // far ahead of wall time: a flush per simulated second costs `flexwatt sim` ~8% CPU.
  double flush_every_s = std::numeric_limits<double>::infinity();
  // For a real-time producer (the agent, `flexwatt sample`): a kill -9 loses at most the last
  // second of rows; one write(2) per file and second.
  static TraceWriterOptions real_time() { return {.flush_every_s = 1.0}; }
};

class TraceWriter {
 public:
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& dir,
                                                     TraceWriterOptions options = {});
  ~TraceWriter();

  void append(const Snapshot& s);
  // Hands every buffered row to the kernel now (one write(2) per file; no fsync). A write error
  // is kept for close(). Cheap when nothing is buffered.
  void flush();
  // Flushes both CSV files and writes meta.json (with "format": "flexwatt-trace/1" added).
  Status close(const nlohmann::json& meta);
  const std::string& dir() const { return dir_; }
  int64_t implausible_rows() const { return implausible_rows_; }
  int64_t implausible_fields() const { return implausible_fields_; }

 private:
  // A tick's time_s is a multiple of the period up to rounding (0.1 * 10 != 1.0 exactly).
  static constexpr double kFlushSlack_s = 1e-6;
  TraceWriter(std::string dir, TraceWriterOptions options);
  void append_jobs(const Snapshot& s);
  std::string dir_;
  TraceWriterOptions options_;
  std::unique_ptr<CsvWriter> gpus_;
  std::unique_ptr<CsvWriter> jobs_;
  double last_flush_s_;  // time_s of the last flush; NaN before the first
  Status pending_;       // first failure, reported by close()
  int64_t implausible_rows_ = 0, implausible_fields_ = 0;
};

}  // namespace fw

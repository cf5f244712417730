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

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/csv.hpp"
#include "core/status.hpp"
#include "telemetry/snapshot.hpp"

namespace fw {

inline constexpr const char* kGpusCsvHeader =
    "time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c";
// "time_s,job,phase,tokens_total,steps_total,gen_concurrency,group_size"
std::string jobs_csv_header();

class TraceWriter {
 public:
  static Result<std::unique_ptr<TraceWriter>> create(const std::string& dir);

  void append(const Snapshot& s);
  // Flushes both CSV files and writes meta.json (with "format": "flexwatt-trace/1" added).
  Status close(const nlohmann::json& meta);
  const std::string& dir() const { return dir_; }
  int64_t implausible_rows() const { return implausible_rows_; }
  int64_t implausible_fields() const { return implausible_fields_; }

 private:
  explicit TraceWriter(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::unique_ptr<CsvWriter> gpus_;
  std::unique_ptr<CsvWriter> jobs_;
  Status pending_;  // first failure, reported by close()
  int64_t implausible_rows_ = 0, implausible_fields_ = 0;
};

}  // namespace fw

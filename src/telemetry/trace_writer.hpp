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

 private:
  explicit TraceWriter(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
  std::unique_ptr<CsvWriter> gpus_;
  std::unique_ptr<CsvWriter> jobs_;
  Status pending_;  // first failure, reported by close()
};

}  // namespace fw

#pragma once
// Streaming reader of power traces: a flexwatt trace directory (gpus.csv, optional jobs.csv
// and meta.json), a lone gpus.csv-style file, an `nvidia-smi --query-gpu=... --format=csv`
// log (see nvsmi_import.hpp) or `dcgmi dmon` output (dmon_import.hpp). The format is detected
// from the header line.
//
// flexwatt format: columns are found by header name; time_s, gpu and power_w are required,
// energy_j, power_limit_w, sm_util, mem_util, sm_clock_mhz, temp_c optional, any other column
// is ignored. Empty optional cells read as NaN.
//
// Contract: next() hands out one row at a time (constant memory, no allocation per row), in
// file order. Rows are validated as they are read; the first bad row stops the reader with
// an InvalidArgument status "path:line: field: problem". Checked here: non-numeric cells,
// NaN/inf time, negative, NaN or infinite power, negative or too-large GPU index, a GPU
// index outside the known set (TraceReaderOptions::gpus or meta.json "gpus"). Time order,
// duplicates and gaps are judged by the consumer (analysis/trace_analysis.hpp), which sees
// rows of every GPU. Not thread-safe.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/csv.hpp"
#include "core/status.hpp"
#include "telemetry/reading_ranges.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

enum class TraceFormat {
  kFlexwattDir,  // a directory holding gpus.csv (+ jobs.csv, meta.json)
  kFlexwattCsv,  // a lone gpus.csv-style file
  kNvidiaSmi,    // an nvidia-smi --format=csv log (units in cells or nounits)
  kDcgmiDmon,    // dcgmi dmon output (see dmon_import.hpp)
};
std::string_view trace_format_name(TraceFormat f);

// Largest GPU index accepted (a guard against garbage indices that would size tables).
inline constexpr int kMaxGpuIndex = 4095;
// Largest |time_s| accepted in a flexwatt trace, seconds (year 2286 as a Unix time): beyond
// it a time is garbage (e.g. two Unix timestamps run together), rejected with file:line.
inline constexpr double kMaxTraceTimeS = 1e10;

// One row of a trace: a GPU's reading at a time. line is the 1-based line in the file.
struct TraceRow {
  double time_s = 0;  // seconds; flexwatt: as written, nvidia-smi: since the first row
  GpuReading reading;
  int64_t line = 0;
};

// Rows in columns, for consumers that take many rows at a time (analyze). Row i of n:
// time_s[i], gpu[i], power_w[i], energy_j[i] (energy_j null: every row NaN), line
// line_base + line[i]. The arrays stay valid until the next call on the reader.
struct TraceRowBatch {
  size_t n = 0;
  const double* time_s = nullptr;
  const double* power_w = nullptr;
  const double* energy_j = nullptr;
  const int32_t* gpu = nullptr;
  const int32_t* line = nullptr;
  int64_t line_base = 0;
};

// Optional columns of a flexwatt gpus.csv the consumer needs; others are not parsed (left
// NaN), which keeps the hot path short for analyses that need only power and energy.
enum TraceField : unsigned {
  kFieldEnergy = 1u << 0,
  kFieldPowerLimit = 1u << 1,
  kFieldSmUtil = 1u << 2,
  kFieldMemUtil = 1u << 3,
  kFieldSmClock = 1u << 4,
  kFieldTemp = 1u << 5,
  kFieldAll = 0x3fu,
};

struct TraceReaderOptions {
  // GPUs the trace must hold only; a row with another index is an error. Empty: any GPU,
  // unless meta.json lists "gpus" (an array of indices, or of objects with "index").
  std::vector<int> gpus;
  unsigned fields = kFieldAll;  // TraceField bits to parse
  // nvidia-smi logs without an index column: GPUs per query loop; 0 = detect from the
  // timestamps (see nvsmi_import.hpp).
  int nvsmi_gpus_per_tick = 0;
  // dcgmi dmon output without a time column: seconds between samples (dmon's -d / 1000),
  // in (0, 3600]; NaN = not given (see dmon_import.hpp).
  double dmon_period_s = kUnset;
  // Parse threads for flexwatt files: 1, 2, or 0 = automatic: 2 when the file is memory-mapped,
  // at least parallel_min_bytes long and the machine has at least 2 hardware threads, else 1.
  // With 2, the file is parsed in blocks of parallel_block_bytes: a worker parses blocks ahead
  // while the caller's thread consumes rows in file order (and parses blocks itself when the
  // worker is behind). Rows, errors (absolute lines) and warnings are the same as with one
  // thread. When parse_threads is 0, FLEXWATT_PARSE_THREADS=1 or 2 in the environment forces
  // that count (see docs/analysis.md, Speed).
  int parse_threads = 0;
  // Testing and fuzzing: false reads every flexwatt line through CsvReader (the reference
  // path) instead of parsing plain lines in place; rows, errors and warnings are the same.
  bool in_place = true;
  size_t parallel_min_bytes = size_t{16} << 20;
  size_t parallel_block_bytes = size_t{4} << 20;
};

// Source of rows of one format (implemented by the flexwatt reader and the nvidia-smi
// importer).
class TraceRowSource {
 public:
  virtual ~TraceRowSource() = default;
  // Fills row and returns true, or returns false at the end or on error (see status()).
  virtual bool next(TraceRow& row) = 0;
  // The next rows in file order (at least one), the same rows next() would give: true, or
  // false at the end or on error (see status()). Do not mix with next() on one source.
  virtual bool next_batch(TraceRowBatch& batch);
  virtual const Status& status() const = 0;
  // Rows dropped on purpose, not as errors (nvidia-smi: power cell [N/A]); reported.
  virtual int64_t missing_power_rows() const { return 0; }
  // Warnings about input read on purpose in a way that loses nothing of the data the
  // trace holds: a partial last line dropped, a repeated header line skipped. Each is
  // "path:line: what". At most kMaxWarnings are kept; warning_count() counts all.
  const std::vector<std::string>& warnings() const { return warnings_; }
  int64_t warning_count() const { return warning_count_; }
  static constexpr size_t kMaxWarnings = 100;

 protected:
  static constexpr size_t kBatchRows = 1024;
  void warn(std::string w) {
    ++warning_count_;
    if (warnings_.size() < kMaxWarnings) warnings_.push_back(std::move(w));
  }
  // For the sources: true (and a warning) when the reader's current row is not data: the
  // unterminated last line of the file, or a copy of the header line (header_line trimmed).
  bool skip_non_data(const CsvReader& r, std::string_view header_line);

 private:
  std::vector<std::string> warnings_;
  int64_t warning_count_ = 0;
  // next_batch's buffers (the default, through next()); pending_: a row read but not yet
  // handed out (its line did not fit the batch's int32_t offsets).
  std::vector<double> batch_time_s_, batch_power_w_, batch_energy_j_;
  std::vector<int32_t> batch_gpu_, batch_line_;
  TraceRow pending_;
  bool has_pending_ = false;
};

class TraceReader {
 public:
  // Opens a trace directory or a CSV file. Errors: NotFound for a missing path or missing
  // gpus.csv, InvalidArgument for an empty file, an unknown header or a bad meta.json.
  static Result<std::unique_ptr<TraceReader>> open(const std::string& path,
                                                   const TraceReaderOptions& options = {});

  TraceFormat format() const { return format_; }
  // File the rows come from (for messages).
  const std::string& rows_path() const { return rows_path_; }
  // jobs.csv of a trace directory, or empty when there is none.
  const std::string& jobs_path() const { return jobs_path_; }
  // meta.json of a directory; for nvidia-smi logs what the importer learned (start time,
  // GPUs per tick, units); empty object otherwise.
  const nlohmann::json& meta() const { return meta_; }

  bool next(TraceRow& row) { return source_->next(row); }
  bool next_batch(TraceRowBatch& batch) { return source_->next_batch(batch); }
  const Status& status() const { return source_->status(); }
  int64_t missing_power_rows() const { return source_->missing_power_rows(); }
  const std::vector<std::string>& warnings() const { return source_->warnings(); }
  int64_t warning_count() const { return source_->warning_count(); }

 private:
  TraceReader() = default;
  TraceFormat format_ = TraceFormat::kFlexwattCsv;
  std::string rows_path_, jobs_path_;
  nlohmann::json meta_ = nlohmann::json::object();
  std::unique_ptr<TraceRowSource> source_;
};

// Checks the values of options a user gives (InvalidArgument naming the analyze flag):
// nvsmi_gpus_per_tick 0..kMaxGpusPerLoop (64), parse_threads 0..2, dmon_period_s NaN or in
// (0, 3600].
Status validate(const TraceReaderOptions& o);

// Tokens produced over a jobs.csv: Σ over jobs of (last − first) tokens_total, reading
// each job's non-empty cells in file order. nullopt when the file has no tokens_total
// column or no job has a value. Errors (InvalidArgument, "path:line: field: problem"):
// missing job column, non-numeric cells, tokens_total decreasing within a job.
Result<std::optional<double>> read_job_tokens(const std::string& jobs_csv_path);

// The GPU set listed in meta.json "gpus" (array of ints or of objects with "index");
// empty when absent. Error when "gpus" has another shape.
Result<std::vector<int>> gpus_from_meta(const nlohmann::json& meta, const std::string& where);

}  // namespace fw

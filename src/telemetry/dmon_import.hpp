#pragma once
// Import of `dcgmi dmon -e 155[,156,...] [-d MS]` output (DCGM's field monitor), streamed row
// by row through the TraceRowSource interface (used by TraceReader).
//
// Format: whitespace-separated columns. A header line "#Entity" (or "# Entity") followed by
// the short names of the monitored fields; an "ID" line below it; then one row per entity and
// sample, "GPU 0  245.3  123456789". dmon prints the two header lines again every so often:
// a repeated header (the same names) and every "ID" line are skipped without a warning (dmon
// does this by design); a header naming other fields is an error.
// Fields used: POWER (field 155, power usage, W; required) and TOTEC (field 156, total energy
// consumption since the driver loaded, mJ; optional, converted to J). Units are fixed by the
// field ids. Other fields are ignored. "N/A" (or any cell starting with "N/A") reads as
// missing: a missing POWER drops the row, counted in missing_power_rows(); a missing TOTEC is
// NaN (the energy then comes from the power trapezoid).
// Entities: only "GPU <id>" rows are imported; the GPU index is <id> (0..kMaxGpuIndex, checked
// against the known GPUs when given). Other entity types (GPU-I, GPU-CI, Switch, CPU, ...) are
// an error.
//
// Time (dmon prints no timestamps): exactly one of
// - TraceReaderOptions::dmon_period_s (analyze --dmon-period-s, dmon's -d delay in seconds;
//   1 s when -d was not given): rows are grouped into samples (a sample ends when a GPU
//   already in it appears again) and sample k is at k × period_s;
// - a leading time column: every line (headers included) starts with a Unix time in seconds,
//   as a line-stamping wrapper writes it (e.g. `dcgmi dmon ... | ts %.s`); time_s = that time
//   − the first row's.
// Neither, or both: refused (exit 2) with a message naming the flag.
//
// Errors (InvalidArgument "path:line: field: problem"): a non-numeric, negative or
// non-finite value, a wrong number of columns, a bad GPU id, a time going backwards in the time
// column. A partial last line (no newline: the log is still being written) is dropped with a
// warning.

#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "core/csv.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {

// True when a first line looks like dcgmi dmon output ("#Entity ..." or "# Entity ...",
// optionally after a leading time column).
bool is_dmon_header(std::string_view line);

// Opens the importer on a reader positioned on the header line. meta receives the
// importer's findings ("format", "fields", "time_source", "dmon_period_s",
// "energy_column").
Result<std::unique_ptr<TraceRowSource>> open_dmon_source(std::unique_ptr<CsvReader> reader,
                                                         const TraceReaderOptions& options,
                                                         const std::vector<int>& known_gpus,
                                                         nlohmann::json& meta);

}  // namespace fw

#pragma once
// Import of `nvidia-smi --query-gpu=timestamp,index,power.draw,... --format=csv[,nounits]`
// logs, streamed row by row through the TraceRowSource interface (used by TraceReader).
//
// Header: comma-separated query names, each optionally followed by a unit in brackets
// ("power.draw [W]"). Required: timestamp and one power column (power.draw,
// power.draw.average or power.draw.instant). Mapped when present: index, power.draw.instant,
// power.limit / enforced.power.limit, utilization.gpu, utilization.memory, clocks.sm /
// clocks.current.sm, temperature.gpu, and a total-energy column (any name starting with
// "energy" or "total_energy", unit [mJ] or [J]: an assumption, nvidia-smi's field list
// differs between driver versions). Other columns (memory.used, uuid, ...) are ignored.
//
// Cells: a number optionally followed by a unit ("557.67 W", "45 %", "1410 MHz"); with
// nounits just the number. "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]" and any other
// bracketed cell read as missing (NaN). A missing power cell is not an error: the row is
// dropped and counted (missing_power_rows), so the analysis sees it as a gap. Utilization in
// % is converted to 0..1.
//
// Time: timestamps "YYYY/MM/DD HH:MM:SS[.fff]" (the logging host's local time; no zone is
// given) become seconds since the first row. meta() records the first timestamp as written
// and as epoch seconds, treating it as UTC (an assumption: the log does not say).
//
// GPU numbering: from the index column when present. Without one, nvidia-smi prints every
// GPU once per query loop, in index order, and each row carries its own timestamp (a loop
// of 8 GPUs spans a few ms, sometimes far more). GPUs are then numbered by their position in
// the loop: row k is GPU k mod N. N (GPUs per loop) is given, or detected from the first
// 4096 rows as the loop length whose boundaries hold the largest time steps (the step between
// loops, ~the query interval, dwarfs the steps within one). Assumes the log starts at the
// beginning of a loop and drops no rows.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/csv.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {

// True when a header row looks like an nvidia-smi query log (timestamp + power.draw*).
bool is_nvsmi_header(const std::vector<std::string_view>& fields);

// Parses "YYYY/MM/DD HH:MM:SS[.fraction]" (also '-' as date separator) into seconds since
// 1970-01-01 00:00:00 of the same clock (no zone applied). False on anything else.
bool parse_nvsmi_timestamp(std::string_view s, double& epoch_s);

enum class CellKind { kNumber, kMissing, kBad };
// Parses a cell: a number with an optional trailing unit word, or a missing marker.
CellKind parse_nvsmi_cell(std::string_view cell, double& out);

// Loop length N from the time steps between consecutive rows (steps[i] = t[i+1] − t[i]);
// returns 1 when the steps show no loop structure. Exposed for tests.
int detect_gpus_per_loop(const std::vector<double>& steps_s, int max_gpus = 64);

// Opens the importer on a reader positioned after the header row (fields = header).
// meta receives the importer's findings ("start_timestamp", "start_epoch_s",
// "gpus_per_tick", "index_column", "units_in_cells").
Result<std::unique_ptr<TraceRowSource>> open_nvsmi_source(std::unique_ptr<CsvReader> reader,
                                                          const std::vector<std::string>& header,
                                                          const TraceReaderOptions& options,
                                                          const std::vector<int>& known_gpus,
                                                          nlohmann::json& meta);

}  // namespace fw

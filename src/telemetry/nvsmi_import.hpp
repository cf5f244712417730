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
// differs between driver versions), pci.bus_id and uuid (GPU identity, below). Other columns
// (memory.used, name, ...) are ignored.
//
// Units: power columns (power.draw*, power.limit) in W, kW or mW, energy columns in J, kJ or
// mJ, from the cell ("0.3 kW") or else the header ("power.draw [mW]"); converted to W and J.
// Within a column either every numeric cell carries a unit or none does: a cell without one
// among cells with one (a line cut off mid-cell, "..., 31") is an error, as is a unit of the
// wrong kind. A missing marker ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", any
// bracketed cell) reads as missing (NaN). A missing power cell is not an error: the row is
// dropped and counted (missing_power_rows), so the analysis sees it as a gap. Utilization in
// % is converted to 0..1.
//
// Time: timestamps "YYYY/MM/DD HH:MM:SS[.fff]" (the logging host's local time; no zone is
// given), years 1970..2200, become seconds since the first row. meta() records the first
// timestamp as written and as epoch seconds, treating it as UTC (an assumption).
//
// GPU identification, first rule that applies (docs/analysis.md):
// 1. an index column: the GPU is its value;
// 2. a pci.bus_id (else uuid) column: GPUs are numbered 0.. in the sorted order of the ids
//    seen in the first 4096 rows (nvidia-smi's default order is by PCI bus id); an id first
//    seen later gets the next number, with a warning;
// 3. else the timestamp cycle: nvidia-smi prints every GPU once per query loop, in index
//    order, rows of one loop a few ms apart and loops an interval apart. The loop length N
//    and the phase (rows before the first loop boundary, when the log was trimmed at the top)
//    are fitted on the first 4096 rows: the smallest N for which the steps at loop
//    boundaries (5th percentile) exceed twice the steps inside loops (95th percentile). One
//    GPU when no N >= 2 fits and the steps are regular; otherwise the import is refused
//    ("add the index column"). The whole file is then checked: three loop boundaries in a
//    row without a boundary-sized step (a GPU stopped reporting, rows lost) refuse it too.
//    A given N (--nvsmi-gpus) is checked the same way and refused when the data show
//    another N.
// The `name` column does not identify a GPU (all GPUs of a node usually share it).
//
// Input as logged: a partial last line is dropped and a repeated header line skipped, each
// with a warning (TraceRowSource::warnings()).

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
// Parses a cell: a number with an optional trailing unit word (returned in *unit when given;
// empty when none), or a missing marker.
CellKind parse_nvsmi_cell(std::string_view cell, double& out, std::string_view* unit = nullptr);

// Factor from `unit` to watts (energy: to joules): W/kW/mW (J/kJ/mJ); NaN for any other unit.
double nvsmi_unit_scale(std::string_view unit, bool energy);

// Largest GPUs per query loop the cycle fit considers (and --nvsmi-gpus accepts).
inline constexpr int kMaxGpusPerLoop = 64;

// A fit of the query-loop cycle to the steps between consecutive rows (steps[i] = t[i+1] −
// t[i]): gpus rows per loop (0: no fit; 1: one GPU), phase = rows before the first loop start
// (row k is GPU (k − phase) mod gpus), threshold_s = a step longer than this is a loop boundary.
struct LoopFit {
  int gpus = 0;
  int phase = 0;
  double threshold_s = 0;
};
// fixed_gpus > 0: only that loop length is tried. Exposed for tests.
LoopFit fit_query_loop(const std::vector<double>& steps_s, int fixed_gpus = 0,
                       int max_gpus = kMaxGpusPerLoop);
// The fitted loop length, or 0 when none fits (tests).
int detect_gpus_per_loop(const std::vector<double>& steps_s, int max_gpus = kMaxGpusPerLoop);

// Opens the importer on a reader positioned after the header row (fields = header).
// meta receives the importer's findings ("start_timestamp", "start_epoch_s",
// "gpus_per_tick", "index_column", "units_in_cells").
Result<std::unique_ptr<TraceRowSource>> open_nvsmi_source(std::unique_ptr<CsvReader> reader,
                                                          const std::vector<std::string>& header,
                                                          const TraceReaderOptions& options,
                                                          const std::vector<int>& known_gpus,
                                                          nlohmann::json& meta);

}  // namespace fw

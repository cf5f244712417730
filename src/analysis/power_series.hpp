#pragma once
// One power series of a node or a site, read from a recorded trace, and its uniform grid (for
// analysis/stability.hpp; definitions in docs/stability.md).
//
// Inputs (load_power_series):
// - every format TraceReader reads (telemetry/trace_reader.hpp: a flexwatt trace directory, a
//   lone gpus.csv-style file, an nvidia-smi CSV log, dcgmi dmon output): the series is the
//   node's, Σ over GPUs, grouped into ticks by the rule of analysis/trace_analysis.hpp (a tick
//   ends when a GPU already in it reports again; its time is its first row's; a GPU missing
//   from a tick holds its previous power). Per GPU, time going backwards is an error
//   (file:line); a repeated (GPU, time) row is dropped and counted; rows out of time order
//   across GPUs are sorted in memory (stable). Ticks that share a time keep the last one
//   (counted as duplicates).
// - a site power CSV: a header with time_s and power_w and no gpu column (other columns are
//   ignored), one row per sample, time strictly increasing; power finite and >= 0.
// Errors name the file, line and field ("site.csv:12: power_w: not a number"). Standard input
// is not accepted (the format is detected by reading the header first).
//
// Uniform grid (resample_uniform): period = the median step between samples (rounded to 12
// significant digits); grid times
// t0 + k·period up to the last sample; values by linear interpolation between the two
// neighbouring samples (a sample on a grid time is taken as is; when every step is within
// 0.1 % of the period, the samples are the grid, as recorded). Steps longer than 1.5 ×
// period are gaps: bridged by the straight line and counted (gaps, gap_s).

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "telemetry/trace_reader.hpp"

namespace fw {

struct PowerSeries {
  std::string path;                   // as given
  std::string format;                 // trace_format_name(), or "site-csv"
  std::string series;                 // "node" or "site"
  std::string jobs_path;              // jobs.csv of a trace directory, else empty
  int gpus = 0;                       // GPUs summed (0 for a site CSV)
  std::vector<double> time_s;         // strictly increasing
  std::vector<double> power_w;        // >= 0, finite; same length as time_s
  int64_t duplicates = 0;             // rows or ticks dropped for a repeated time
  int64_t incomplete_ticks = 0;       // node ticks where some GPU held its previous value
  int64_t unsorted_rows = 0;          // rows read out of time order across GPUs (then sorted)
  std::vector<std::string> warnings;  // from the reader ("path:line: what"), at most 100

  double duration_s() const { return time_s.empty() ? 0 : time_s.back() - time_s.front(); }
  // Trapezoid integral of power over time, joules (0 for fewer than 2 samples).
  double energy_j() const;
  double peak_w() const;
};

// Reads a trace as above. Errors: NotFound (missing path), InvalidArgument (bad input, with
// file:line:field; fewer than 2 samples; "-").
Result<PowerSeries> load_power_series(const std::string& path,
                                      const TraceReaderOptions& reader_options = {});

struct UniformSeries {
  double t0_s = 0;
  double period_s = 0;          // median step of the input
  std::vector<double> power_w;  // power at t0 + k·period
  bool uniform_input = false;   // every input step within 0.1 % of the period
  double max_step_s = 0;        // longest input step
  int64_t gaps = 0;             // input steps > 1.5 × period
  double gap_s = 0;             // Σ (step − period) over gaps
  double time_at(size_t k) const { return t0_s + static_cast<double>(k) * period_s; }
};

// Most grid points resample_uniform makes (a guard: 10^8 doubles = 800 MB).
inline constexpr size_t kMaxGridPoints = 100'000'000;

// The uniform grid of s. Errors: InvalidArgument (naming s.path) for fewer than 2 samples, a
// median step of 0, or a grid over kMaxGridPoints.
Result<UniformSeries> resample_uniform(const PowerSeries& s);

}  // namespace fw

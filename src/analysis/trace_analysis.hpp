#pragma once
// Analysis of a power trace, per GPU and for the node (the sum over GPUs): duration,
// samples, energy, mean and peak power, and windowed budget figures (windows.hpp);
// tokens and tokens per MWh from jobs.csv. Streams the trace in constant memory when its
// rows are in time order across GPUs (the normal case); see the rules below.
//
// Rules (also in docs/analysis.md):
// - Per GPU, time must not go backwards: an error naming file:line.
// - Duplicate rows (same GPU, same time): the first is kept, later ones are dropped and
//   counted ("duplicates").
// - Unsorted rows (a row earlier than a row already read of another GPU, e.g. a file
//   sorted by GPU): the trace is read again and sorted in memory by time (stable; ~40 bytes
//   a row) and the count is reported ("unsorted_rows"). Results are the same as for the
//   sorted file.
// - Sample period of a series: median step of its first 64 steps. A step longer than 1.5×
//   the period is a gap (counted, with the missing time gap_s = Σ (step − period)). The
//   energy integral bridges gaps (trapezoid); in windows a sample holds its value for its
//   step, but across a gap only for one period, so windows count only covered time
//   (windows.hpp). The last sample holds for one period.
// - Energy: when every row of a GPU has an energy counter and it never decreases,
//   last − first ("counter"); else the trapezoid of power over time ("trapezoid").
//   duration_s = last time − first time; mean power = energy / duration (the one sample's
//   power when duration is 0); peak power = largest sample.
// - Windows must be at least the series' sample period (a shorter window holds no whole
//   sample): a window given explicitly (windows_given / curve_windows_given, and always the
//   oversubscription window) that is shorter is an error naming the flag; a default window
//   that is shorter is left unjudged (null) with a warning. At most kMaxWindowLengths
//   lengths per list; with windows >= the period, a series judges at most one window per
//   sample, and windows spanned by a gap are counted (skipped) in O(1).
// - Node: rows are grouped into ticks: a tick ends when a GPU already in it reports again
//   (an nvidia-smi query loop, or all GPUs sharing one time_s). Its time is its first row's.
//   Node power at a tick = Σ over GPUs of each GPU's latest power (a GPU missing from the
//   tick holds its previous value; such ticks are counted as "incomplete_ticks"). Node energy
//   = Σ GPU energies; node mean = Σ GPU means; node energy_source is "counter", "trapezoid" or
//   "mixed". Energy is primary: node (and job) mean power = node energy / node duration (the
//   first to the last tick), so mean, energy and duration agree; when GPUs cover different
//   spans this is the mean over the node's span, not the sum of the GPUs' own means.
// - Job maps are checked against the trace: a job naming a GPU the trace does not hold, or
//   two jobs sharing a GPU, is an error.
// - Budget scope: kGpu judges each GPU's windows against budget_w, kNode judges the node's,
//   kJob each job's (the sum over the job's GPUs). The other series' windows report peak
//   means only (budget_w NaN); so do all series when budget_w is NaN (no budget given).
// - Jobs: a job series is the sum over its GPUs, tick by tick like the node. The job→GPU
//   map comes from AnalysisOptions::jobs, else from meta.json ("jobs" or "scenario.jobs",
//   each {"name", "gpus": [indices]}); without one there are no job series.
// - Windows curve (windows_curve.hpp): the node, every job and (scope gpu) every GPU also
//   get windows on curve_windows_s; the node and every job keep the window means at
//   oversub_window_s for the oversubscription quantile (oversubscription.hpp).
// - Nameplate (per GPU): peak window mean / nameplate for a GPU, / (nameplate × GPUs) for
//   the node.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/windows.hpp"
#include "analysis/windows_curve.hpp"
#include "core/status.hpp"
#include "telemetry/trace_reader.hpp"
#include "vocab/budget_scope.hpp"

namespace fw {

// The GPUs one job runs on (plant/trace GPU indices).
struct JobGpus {
  std::string name;
  std::vector<int> gpus;
};

struct AnalysisOptions {
  // > 0; NaN: none given: no series is judged (every series reports window means only, as
  // the series outside the scope do), and `analyze` proposes budgets (trace_report.hpp).
  double budget_w = kUnset;
  BudgetScope scope = BudgetScope::kNode;
  std::vector<double> windows_s = {0.5, 10, 30, 300};           // each > 0
  double nameplate_w = kUnset;                                  // per GPU; NaN: not given
  double gap_factor = 1.5;                                      // step > factor × period is a gap
  std::vector<double> curve_windows_s = kDefaultCurveWindowsS;  // each > 0
  double oversub_window_s = 30;                                 // > 0
  std::vector<JobGpus> jobs;  // empty: from meta.json when it has them
  // Whether windows_s / curve_windows_s were given by the user rather than left at their
  // defaults (see the window rule above).
  bool windows_given = false;
  bool curve_windows_given = false;
};

// Most window lengths accepted in windows_s and in curve_windows_s.
inline constexpr size_t kMaxWindowLengths = 64;

struct SeriesSummary {
  int gpu = -1;       // −1: the node or a job
  std::string name;   // "node", "gpu<i>" or the job's name
  int gpu_count = 1;  // GPUs summed in this series
  int64_t samples = 0;
  double duration_s = 0;
  double energy_j = 0;
  std::string energy_source;  // "counter", "trapezoid" or (node) "mixed"
  double mean_power_w = 0;
  double peak_power_w = 0;
  double period_s = 0;  // median sample period
  int64_t gaps = 0;
  double gap_s = 0;  // missing time
  int64_t duplicates = 0;
  double budget_w = kUnset;     // NaN: windows not judged against a budget (scope)
  double nameplate_w = kUnset;  // of this series (node: per-GPU nameplate × GPUs)
  std::vector<WindowStats> windows;
  std::vector<WindowStats> curve;     // on curve_windows_s; empty when not computed
  std::vector<double> oversub_means;  // judged window means at oversub_window_s (node, jobs)
  // peak_mean_w / nameplate_w of window i; NaN when no nameplate or no judged window.
  double peak_share_of_nameplate(size_t i) const;
};

// Peak window mean of `w` / nameplate_w; NaN when no nameplate or no judged window.
double peak_share(const WindowStats& w, double nameplate_w);

struct TraceSummary {
  std::string format;  // trace_format_name()
  SeriesSummary node;
  std::vector<SeriesSummary> gpus;  // by GPU index
  std::vector<SeriesSummary> jobs;  // in the job map's order; empty without one
  // From meta.json when present: "simulated" (or a producer naming the simulator),
  // "gpu_models", "nameplate_w" (per GPU). Empty / false / NaN otherwise.
  bool simulated = false;
  std::vector<std::string> gpu_models;
  double meta_nameplate_w = kUnset;
  std::optional<double> tokens;
  std::optional<double> tokens_per_mwh;
  int64_t rows = 0;  // data rows read (duplicates included)
  int64_t duplicates = 0;
  int64_t unsorted_rows = 0;
  int64_t missing_power_rows = 0;  // nvidia-smi rows with power [N/A], dropped
  int64_t incomplete_ticks = 0;
  bool sorted_in_memory = false;
  // Input read on purpose in a way worth saying (partial last line dropped, repeated header
  // skipped, a default window shorter than the sample period left unjudged): "where: what".
  // At most TraceRowSource::kMaxWarnings kept; warning_count counts all.
  std::vector<std::string> warnings;
  int64_t warning_count = 0;
};

// Streaming core. Feed rows in file order (batches from TraceReader::next_batch), then
// finish(). add_batch() stops at the first row it refuses: an error (status()) or, in
// streaming mode, the first unsorted row (needs_sort() true; the caller restarts in sorting
// mode, which buffers every row and sorts in finish()).
class TraceAnalyzer {
 public:
  TraceAnalyzer(const AnalysisOptions& options, std::string rows_path, bool sort_in_memory);
  ~TraceAnalyzer();
  TraceAnalyzer(const TraceAnalyzer&) = delete;
  TraceAnalyzer& operator=(const TraceAnalyzer&) = delete;

  // Each row of the batch in order; false at the first row refused (see above).
  bool add_batch(const TraceRowBatch& batch);
  bool needs_sort() const { return needs_sort_; }
  // The line of the row that made needs_sort() true.
  int64_t unsorted_line() const { return unsorted_line_; }
  const Status& status() const { return status_; }
  // Errors: InvalidArgument when there were no rows. Tokens are not filled here.
  Result<TraceSummary> finish();

 private:
  struct Impl;
  bool add_one(double time_s, int gpu, double power_w, double energy_j, int64_t line);
  Impl* impl_;
  bool needs_sort_ = false;
  int64_t unsorted_line_ = 0;
  Status status_;
};

// The job→GPU map in a meta.json object ("jobs" or "scenario.jobs"); empty when absent.
// InvalidArgument naming `where` when present but malformed.
Result<std::vector<JobGpus>> jobs_from_meta(const nlohmann::json& meta, const std::string& where);

// Validates options (budget NaN or > 0 and finite, windows > 0 and finite, at most
// kMaxWindowLengths each, gap_factor > 1, nameplate NaN or > 0): InvalidArgument otherwise.
Status validate(const AnalysisOptions& options);

// Reads and analyzes a trace (TraceReader formats), with tokens from jobs.csv.
Result<TraceSummary> analyze_trace(const std::string& path, const AnalysisOptions& options,
                                   const TraceReaderOptions& reader_options = {});

}  // namespace fw

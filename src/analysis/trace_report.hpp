#pragma once
// The figures `flexwatt analyze` reports beyond the per-series summary of analyze_trace():
// the nameplate per GPU, the windows curves, the oversubscription ratio and the cost.
//
// Nameplate per GPU, in order: the caller's value (the --nameplate-w flag), else meta.json's
// "nameplate_w", else the GPU catalogue's (hw/gpu_catalog.hpp) nameplate of the GPU models in
// meta.json "gpu_models" (mixed models: their mean, so the node's sum is right); NaN with an
// empty source when none applies (a model the catalogue does not know leaves it NaN).

#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/oversubscription.hpp"
#include "analysis/trace_analysis.hpp"
#include "analysis/windows_curve.hpp"

namespace fw {

struct Nameplate {
  double per_gpu_w = kUnset;
  std::string source;  // "--nameplate-w", "meta.json nameplate_w", "meta.json gpu_models (...)"
};

// Resolves the nameplate as the header says; flag_w NaN: not given.
Nameplate resolve_nameplate(const TraceSummary& t, double flag_w);

// A budget proposed from the trace for one window length of AnalysisOptions::windows_s: the
// smallest budget per unit of the scope (each GPU, the node, each job) that no judged window of
// that length exceeds = the largest peak window mean over the scope's series (a mean equal to
// the budget never violates: windows.hpp). NaN when no series judged a window of that length.
struct ProposedBudget {
  double window_s = 0;
  double budget_w = kUnset;
  std::string series;                  // the series whose peak sets it; empty when NaN
  double share_of_nameplate = kUnset;  // budget_w / that series' nameplate; NaN: unknown
};

// The oversubscription headroom of a series (oversubscription.hpp): its nameplate less the
// provisioned power P, in W (NaN without a nameplate), beside P and the ratio.
struct OversubHeadroom {
  std::string series;  // "node" or a job's name
  double provisioned_w = kUnset, nameplate_w = kUnset, headroom_w = kUnset, ratio = kUnset;
};

// Options (filled by the caller, e.g. from flags) and results, together.
struct TraceExtras {
  double curve_tolerance = 0;                           // [0, 1)
  double oversub_window_s = 30, oversub_tolerance = 0;  // tolerance in [0, 1)
  CostOptions cost;
  double nameplate_w = kUnset;   // per GPU, resolved
  std::string nameplate_source;  // Nameplate::source
  // Series with a windows curve: node, jobs, (scope gpu) GPUs. They point into the
  // TraceSummary given to compute_extras, which must outlive this object.
  std::vector<const SeriesSummary*> curve_series;
  std::vector<WindowsCurve> curves;  // one per curve_series
  Oversubscription node_oversub;
  std::vector<Oversubscription> job_oversub;  // one per t.jobs
  CostReport cost_report;
  // Budgets proposed from the trace (what `analyze` prints without --budget-w): one per
  // AnalysisOptions::windows_s length, in its order; the headroom of the node, then each job.
  std::vector<ProposedBudget> proposed;
  std::vector<OversubHeadroom> headroom;
};

// Checks x's options: tolerances in [0, 1), price and intensity finite and >= 0
// (InvalidArgument naming the flag).
Status validate(const TraceExtras& x);

// Resolves the nameplate (flag_nameplate_w NaN: not given), writes it into every series of `t`
// (node: × GPUs, job: × its GPUs), then fills x's results from x's options. REQUIRES: x's
// results empty (a fresh object with options set).
void compute_extras(TraceSummary& t, const AnalysisOptions& o, double flag_nameplate_w,
                    TraceExtras& x);

}  // namespace fw

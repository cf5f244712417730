#pragma once
// The output of `flexwatt analyze`: the JSON document (--json) and the text tables, from an
// analyze_trace() summary and its compute_extras() figures (analysis/trace_report.hpp).

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/trace_report.hpp"

namespace fw {

// The --json document (key order kept); "proposed_budgets" always (x.proposed, x.headroom).
nlohmann::ordered_json analyze_json(const TraceSummary& t, const AnalysisOptions& o,
                                    const TraceExtras& x);
// The summary and windows tables, on stdout.
void print_table(const std::string& trace, const TraceSummary& r, const AnalysisOptions& o);
// The windows curve, oversubscription and cost sections, on stdout.
void print_extras(const TraceSummary& t, const TraceExtras& x);
// The proposed budgets and the oversubscription headroom (x.proposed, x.headroom), on stdout:
// what `analyze` prints when no budget was given (o.budget_w NaN).
void print_proposal(const AnalysisOptions& o, const TraceExtras& x);

}  // namespace fw

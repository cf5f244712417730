#include "analysis/analyze_report.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "analysis/json_fields.hpp"
#include "core/format.hpp"
#include "core/text_table.hpp"

namespace fw {
namespace {

using ojson = nlohmann::ordered_json;

ojson num_or_null(double v) { return fw::num_or_null<ojson>(v); }

ojson series_json(const SeriesSummary& s, bool is_job = false) {
  ojson j;
  if (is_job) {
    j["job"] = s.name;
  } else {
    j["gpu"] = s.gpu < 0 ? ojson("node") : ojson(s.gpu);
  }
  j["samples"] = s.samples;
  j["duration_s"] = s.duration_s;
  j["energy_j"] = s.energy_j;
  j["energy_source"] = s.energy_source;
  j["mean_power_w"] = s.mean_power_w;
  j["peak_power_w"] = s.peak_power_w;
  j["period_s"] = s.period_s;
  j["gaps"] = s.gaps;
  j["gap_s"] = s.gap_s;
  j["duplicates"] = s.duplicates;
  j["budget_w"] = num_or_null(s.budget_w);
  ojson ws = ojson::array();
  const bool judged = !std::isnan(s.budget_w);
  for (size_t i = 0; i < s.windows.size(); ++i) {
    const WindowStats& w = s.windows[i];
    const bool any = w.windows > 0;
    ojson o;
    o["window_s"] = w.window_s;
    o["violation_rate"] = judged && any ? ojson(w.violation_rate) : ojson(nullptr);
    o["peak_mean_w"] = any ? ojson(w.peak_mean_w) : ojson(nullptr);
    o["energy_over_budget_j"] = judged && any ? ojson(w.energy_over_budget_j) : ojson(nullptr);
    o["peak_share_of_nameplate"] = num_or_null(s.peak_share_of_nameplate(i));
    o["windows"] = w.windows;
    o["violations"] = judged ? ojson(w.violations) : ojson(nullptr);
    o["skipped_windows"] = w.skipped;
    ws.push_back(std::move(o));
  }
  j["windows"] = std::move(ws);
  return j;
}

ojson curve_json(const TraceExtras& x) {
  ojson j;
  j["tolerance"] = x.curve_tolerance;
  ojson ws = ojson::array();
  if (!x.curves.empty()) {
    for (const auto& p : x.curves[0].points) ws.push_back(p.window_s);
  }
  j["windows_s"] = std::move(ws);
  j["holds_definition"] =
      "shortest grid window at which the violation rate <= tolerance there and at every longer "
      "grid window";
  ojson ss = ojson::array();
  for (size_t i = 0; i < x.curves.size(); ++i) {
    const SeriesSummary& s = *x.curve_series[i];
    const WindowsCurve& c = x.curves[i];
    const bool judged = !std::isnan(s.budget_w);
    ojson o;
    o["series"] = s.name;
    o["kind"] = s.gpu >= 0 ? "gpu" : (s.name == "node" ? "node" : "job");
    o["budget_w"] = num_or_null(s.budget_w);
    o["nameplate_w"] = num_or_null(s.nameplate_w);
    o["shortest_holding_window_s"] =
        judged ? num_or_null(c.shortest_holding_window_s) : ojson(nullptr);
    ojson ps = ojson::array();
    for (size_t k = 0; k < c.points.size(); ++k) {
      const WindowStats& w = c.points[k];
      const bool any = w.windows > 0;
      ojson p;
      p["window_s"] = w.window_s;
      p["windows"] = w.windows;
      p["violations"] = judged ? ojson(w.violations) : ojson(nullptr);
      p["violation_rate"] = judged && any ? ojson(w.violation_rate) : ojson(nullptr);
      p["holds"] = judged && any ? ojson(c.holds(k)) : ojson(nullptr);
      p["peak_mean_w"] = any ? ojson(w.peak_mean_w) : ojson(nullptr);
      p["peak_share_of_nameplate"] = num_or_null(peak_share(w, s.nameplate_w));
      ps.push_back(std::move(p));
    }
    o["points"] = std::move(ps);
    ss.push_back(std::move(o));
  }
  j["series"] = std::move(ss);
  return j;
}

ojson oversub_one_json(const std::string& name, const Oversubscription& o) {
  ojson j;
  j["series"] = name;
  j["windows"] = o.windows;
  j["windows_above"] = o.windows_above;
  j["provisioned_w"] = num_or_null(o.provisioned_w);
  j["nameplate_w"] = num_or_null(o.nameplate_w);
  j["share_of_nameplate"] = num_or_null(o.share_of_nameplate);
  j["ratio"] = num_or_null(o.ratio);
  return j;
}

ojson oversub_json(const TraceExtras& x, const TraceSummary& t) {
  ojson j = oversub_one_json("node", x.node_oversub);
  j["window_s"] = x.oversub_window_s;
  j["tolerance"] = x.oversub_tolerance;
  j["nameplate_per_gpu_w"] = num_or_null(x.nameplate_w);
  j["nameplate_source"] = x.nameplate_source.empty() ? ojson(nullptr) : ojson(x.nameplate_source);
  j["definition"] =
      "provisioned_w = smallest P with (windows whose mean > P) / windows <= tolerance, i.e. the "
      "(1 - tolerance) quantile of the window means; ratio = nameplate_w / provisioned_w";
  ojson shares = ojson::array();
  if (!x.curves.empty()) {
    for (const auto& w : x.curves[0].points) {
      shares.push_back(
          {{"window_s", w.window_s}, {"share", num_or_null(peak_share(w, t.node.nameplate_w))}});
    }
  }
  j["peak_share_of_nameplate"] = std::move(shares);
  ojson js = ojson::array();
  for (size_t i = 0; i < x.job_oversub.size(); ++i) {
    js.push_back(oversub_one_json(t.jobs[i].name, x.job_oversub[i]));
  }
  j["jobs"] = std::move(js);
  return j;
}

ojson cost_json(const TraceExtras& x, const TraceSummary& t) {
  ojson j;
  j["series"] = "node";
  j.update(cost_report_json<ojson>(x.cost_report));
  j["mean_power_w"] = t.node.mean_power_w;
  j["nameplate_per_gpu_w"] = num_or_null(x.nameplate_w);
  j["oversubscription_ratio"] = num_or_null(x.node_oversub.ratio);
  j["assumptions"] =
      "annual figures: the measured mean power all year (8760 h); GPUs per MW: GPU power only "
      "(no host, network or cooling overhead)";
  return j;
}

const char* scope_unit(BudgetScope s) {
  return s == BudgetScope::kGpu ? "GPU" : (s == BudgetScope::kJob ? "job" : "node");
}

ojson proposal_json(const AnalysisOptions& o, const TraceExtras& x) {
  ojson j;
  j["scope"] = o.scope == BudgetScope::kGpu ? "gpu" : o.scope == BudgetScope::kJob ? "job" : "node";
  j["definition"] =
      "budget_w = the smallest budget per unit of the scope that no judged window of window_s "
      "exceeds: the largest peak window mean over the scope's series (series: the one that sets "
      "it)";
  ojson bs = ojson::array();
  for (const ProposedBudget& p : x.proposed) {
    bs.push_back({{"window_s", p.window_s},
                  {"budget_w", num_or_null(p.budget_w)},
                  {"series", p.series.empty() ? ojson(nullptr) : ojson(p.series)},
                  {"share_of_nameplate", num_or_null(p.share_of_nameplate)}});
  }
  j["budgets"] = std::move(bs);
  ojson hs = ojson::array();
  for (const OversubHeadroom& h : x.headroom) {
    hs.push_back({{"series", h.series},
                  {"provisioned_w", num_or_null(h.provisioned_w)},
                  {"nameplate_w", num_or_null(h.nameplate_w)},
                  {"headroom_w", num_or_null(h.headroom_w)},
                  {"ratio", num_or_null(h.ratio)}});
  }
  j["oversubscription_headroom"] = {{"window_s", x.oversub_window_s},
                                    {"tolerance", x.oversub_tolerance},
                                    {"series", std::move(hs)}};
  return j;
}

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

ojson analyze_json(const TraceSummary& t, const AnalysisOptions& o, const TraceExtras& x) {
  ojson j;
  j["format"] = t.format;
  j["budget_w"] = num_or_null(o.budget_w);
  j["scope"] = o.scope == BudgetScope::kGpu ? "gpu" : o.scope == BudgetScope::kJob ? "job" : "node";
  j["nameplate_w"] = num_or_null(o.nameplate_w);
  j["node"] = series_json(t.node);
  ojson gs = ojson::array();
  for (const auto& g : t.gpus) gs.push_back(series_json(g));
  j["gpus"] = std::move(gs);
  j["tokens"] = t.tokens ? ojson(*t.tokens) : ojson(nullptr);
  j["tokens_per_mwh"] = t.tokens_per_mwh ? ojson(*t.tokens_per_mwh) : ojson(nullptr);
  j["rows"] = t.rows;
  j["duplicates"] = t.duplicates;
  j["unsorted_rows"] = t.unsorted_rows;
  j["missing_power_rows"] = t.missing_power_rows;
  j["incomplete_ticks"] = t.incomplete_ticks;
  j["warnings"] = t.warnings;
  j["warning_count"] = t.warning_count;
  j["simulated"] = t.simulated;
  ojson js = ojson::array();
  for (const auto& s : t.jobs) js.push_back(series_json(s, true));
  j["jobs"] = std::move(js);
  j["windows_curve"] = curve_json(x);
  j["oversubscription"] = oversub_json(x, t);
  j["cost"] = cost_json(x, t);
  j["proposed_budgets"] = proposal_json(o, x);
  return j;
}

void print_table(const std::string& trace, const TraceSummary& r, const AnalysisOptions& o) {
  const std::string budget = std::isnan(o.budget_w)
                                 ? std::string("no budget (proposals below)")
                                 : fmt("budget %.1f W per ", o.budget_w) + scope_unit(o.scope);
  std::printf("flexwatt analyze: %s (%s), %zu GPU%s, %s\n", trace.c_str(), r.format.c_str(),
              r.gpus.size(), r.gpus.size() == 1 ? "" : "s", budget.c_str());
  std::printf(
      "rows %lld, duplicates dropped %lld, unsorted rows %lld%s, power [N/A] rows %lld, "
      "incomplete ticks %lld\n\n",
      static_cast<long long>(r.rows), static_cast<long long>(r.duplicates),
      static_cast<long long>(r.unsorted_rows), r.sorted_in_memory ? " (sorted)" : "",
      static_cast<long long>(r.missing_power_rows), static_cast<long long>(r.incomplete_ticks));
  std::printf("%-6s %9s %11s %14s %-10s %10s %10s %9s %5s %8s\n", "series", "samples", "duration_s",
              "energy_j", "source", "mean_w", "peak_w", "period_s", "gaps", "gap_s");
  auto row = [](const SeriesSummary& s) {
    const std::string name = s.name;
    std::printf("%-6s %9lld %11.3f %14.1f %-10s %10.2f %10.2f %9.4f %5lld %8.3f\n", name.c_str(),
                static_cast<long long>(s.samples), s.duration_s, s.energy_j,
                s.energy_source.c_str(), s.mean_power_w, s.peak_power_w, s.period_s,
                static_cast<long long>(s.gaps), s.gap_s);
  };
  row(r.node);
  for (const auto& g : r.gpus) row(g);
  for (const auto& j : r.jobs) row(j);
  std::printf("\n%-6s %9s %8s %10s %12s %11s %14s %10s\n", "series", "window_s", "windows",
              "violations", "viol_rate", "peak_mean_w", "over_budget_j", "peak/nameplate");
  auto wrow = [](const SeriesSummary& s) {
    const std::string name = s.name;
    const bool judged = !std::isnan(s.budget_w);
    for (size_t i = 0; i < s.windows.size(); ++i) {
      const WindowStats& w = s.windows[i];
      const bool any = w.windows > 0;
      std::printf("%-6s %9g %8lld %10s %12s %11s %14s %10s\n", name.c_str(), w.window_s,
                  static_cast<long long>(w.windows),
                  judged ? std::to_string(w.violations).c_str() : "-",
                  judged && any ? fmt("%.4f", w.violation_rate).c_str() : "-",
                  any ? fmt("%.2f", w.peak_mean_w).c_str() : "-",
                  judged && any ? fmt("%.1f", w.energy_over_budget_j).c_str() : "-",
                  fmt("%.3f", s.peak_share_of_nameplate(i)).c_str());
    }
  };
  wrow(r.node);
  for (const auto& g : r.gpus) wrow(g);
  for (const auto& j : r.jobs) wrow(j);
  if (r.tokens) {
    std::printf("\ntokens %s, tokens per MWh %s\n", format_si(*r.tokens).c_str(),
                r.tokens_per_mwh ? format_si(*r.tokens_per_mwh).c_str() : "-");
  } else {
    std::printf("\ntokens: none (no jobs.csv with tokens_total)\n");
  }
  if (std::isnan(o.budget_w)) {
    std::printf("(- : not judged: no --budget-w; or no window with enough data)\n");
  } else {
    std::printf(
        "(- : not judged: the budget applies to the %s; or no window with enough data)\n",
        o.scope == BudgetScope::kGpu ? "GPUs" : (o.scope == BudgetScope::kJob ? "jobs" : "node"));
  }
}

void print_proposal(const AnalysisOptions& o, const TraceExtras& x) {
  std::printf(
      "\nproposed budgets (no --budget-w given): for each window length, the smallest budget "
      "per %s\nthat no window's mean exceeds in this trace (the largest peak window mean)\n",
      scope_unit(o.scope));
  std::printf("%9s %11s %14s  %s\n", "window_s", "budget_w", "peak/nameplate", "set by");
  for (const ProposedBudget& p : x.proposed) {
    std::printf("%9g %11s %14s  %s\n", p.window_s, fmt("%.1f", p.budget_w).c_str(),
                fmt("%.3f", p.share_of_nameplate).c_str(),
                p.series.empty() ? "- (no window judged)" : p.series.c_str());
  }
  std::printf("oversubscription headroom (%g s windows, tolerance %g; nameplate - provisioned):\n",
              x.oversub_window_s, x.oversub_tolerance);
  for (const OversubHeadroom& h : x.headroom) {
    std::printf("  %s: provisioned %s W", h.series.c_str(), fmt("%.1f", h.provisioned_w).c_str());
    if (std::isfinite(h.headroom_w)) {
      std::printf(", nameplate %.0f W: headroom %.1f W, ratio %.2fx\n", h.nameplate_w, h.headroom_w,
                  h.ratio);
    } else {
      std::printf("; headroom: - (no nameplate: give --nameplate-w)\n");
    }
  }
  std::printf(
      "(what this trace shows, not a forecast: judge a budget with --budget-w W; "
      "docs/analysis.md)\n");
}

void print_extras(const TraceSummary& t, const TraceExtras& x) {
  std::printf(
      "\nwindows curve (violation rate by window; holds: rate <= %g here and at every "
      "longer window)\n",
      x.curve_tolerance);
  std::printf("%-12s %9s %8s %12s %11s %14s %5s\n", "series", "window_s", "windows", "viol_rate",
              "peak_mean_w", "peak/nameplate", "holds");
  for (size_t i = 0; i < x.curves.size(); ++i) {
    const SeriesSummary& s = *x.curve_series[i];
    const bool judged = !std::isnan(s.budget_w);
    const WindowsCurve& c = x.curves[i];
    for (size_t k = 0; k < c.points.size(); ++k) {
      const WindowStats& w = c.points[k];
      const bool any = w.windows > 0;
      std::printf("%-12s %9g %8lld %12s %11s %14s %5s\n", s.name.c_str(), w.window_s,
                  static_cast<long long>(w.windows),
                  judged && any ? fmt("%.4f", w.violation_rate).c_str() : "-",
                  any ? fmt("%.2f", w.peak_mean_w).c_str() : "-",
                  fmt("%.3f", peak_share(w, s.nameplate_w)).c_str(),
                  judged && any ? (c.holds(k) ? "yes" : "no") : "-");
    }
  }
  for (size_t i = 0; i < x.curves.size(); ++i) {
    const SeriesSummary& s = *x.curve_series[i];
    if (std::isnan(s.budget_w)) continue;
    const double w = x.curves[i].shortest_holding_window_s;
    if (std::isfinite(w)) {
      std::printf("shortest window at which the budget holds, %s: %g s\n", s.name.c_str(), w);
    } else {
      std::printf("shortest window at which the budget holds, %s: none on the grid\n",
                  s.name.c_str());
    }
  }
  const Oversubscription& ov = x.node_oversub;
  std::string line = strprintf(
      "oversubscription (node, %g s windows, tolerance %g): provisioned %s W over %lld windows",
      x.oversub_window_s, x.oversub_tolerance, fmt("%.1f", ov.provisioned_w).c_str(),
      static_cast<long long>(ov.windows));
  if (std::isfinite(ov.ratio)) {
    line += strprintf(" = %.1f %% of nameplate %.0f W (%s); supported ratio %.2fx",
                      100 * ov.share_of_nameplate, ov.nameplate_w, x.nameplate_source.c_str(),
                      ov.ratio);
  } else {
    line += "; ratio: - (no nameplate: give --nameplate-w)";
  }
  std::printf("\n%s\n", wrap_text(line, TextStyle{}.width, "  ").c_str());
  for (size_t i = 0; i < x.job_oversub.size(); ++i) {
    const Oversubscription& j = x.job_oversub[i];
    std::printf("  job %s: provisioned %s W, %s of nameplate, ratio %s\n", t.jobs[i].name.c_str(),
                fmt("%.1f", j.provisioned_w).c_str(),
                std::isfinite(j.share_of_nameplate)
                    ? (fmt("%.1f", 100 * j.share_of_nameplate) + " %").c_str()
                    : "-",
                std::isfinite(j.ratio) ? (fmt("%.2f", j.ratio) + "x").c_str() : "-");
  }
  const CostReport& c = x.cost_report;
  std::printf("\ncost and carbon (node; $%g/kWh, %g kg CO2/kWh): %.4f kWh, $%.4f, %.4f kg CO2",
              c.price_per_kwh, c.kg_co2_per_kwh, c.energy_kwh, c.cost_usd, c.co2_kg);
  if (std::isfinite(c.usd_per_million_tokens)) {
    std::printf(", $%.4f per million tokens", c.usd_per_million_tokens);
  }
  std::printf("\nannualised at the mean %.1f W (8760 h): %.2f MWh, $%.0f, %.2f t CO2\n",
              t.node.mean_power_w, c.annual_energy_mwh, c.annual_cost_usd, c.annual_co2_t);
  if (std::isfinite(c.gpus_per_mw_oversubscribed)) {
    std::printf(
        "GPUs per MW of capacity (GPU power only): %.0f at nameplate, %.0f at %.2fx "
        "oversubscription (+%.0f)\n",
        c.gpus_per_mw_nameplate, c.gpus_per_mw_oversubscribed, ov.ratio, c.extra_gpus_per_mw);
  } else if (std::isfinite(c.gpus_per_mw_nameplate)) {
    std::printf("GPUs per MW of capacity (GPU power only): %.0f at nameplate\n",
                c.gpus_per_mw_nameplate);
  }
  if (t.simulated) std::printf("(trace from the simulator: all figures simulated)\n");
}

}  // namespace fw

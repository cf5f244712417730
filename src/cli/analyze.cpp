// flexwatt analyze: energy, peaks and windowed budget violations of a power trace.

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/cost.hpp"
#include "analysis/oversubscription.hpp"
#include "analysis/trace_analysis.hpp"
#include "analysis/windows_curve.hpp"
#include "cli/json_fields.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"
#include "sim/gpu_model.hpp"

namespace fw::cli {
namespace {

using ojson = nlohmann::ordered_json;

ojson num_or_null(double v) { return fw::cli::num_or_null<ojson>(v); }

// Figures beyond the per-series summary: windows curves, oversubscription, cost.
struct Extras {
  double curve_tolerance = 0;
  double oversub_window_s = 30, oversub_tolerance = 0;
  CostOptions cost;
  double nameplate_w = kUnset;   // per GPU, resolved
  std::string nameplate_source;  // "--nameplate-w", "meta.json", "gpu model <name>", ""
  std::vector<const SeriesSummary*> curve_series;  // node, jobs, (scope gpu) GPUs
  std::vector<WindowsCurve> curves;
  Oversubscription node_oversub;
  std::vector<Oversubscription> job_oversub;
  CostReport cost_report;
};

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

ojson curve_json(const Extras& x) {
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

ojson oversub_json(const Extras& x, const TraceSummary& t) {
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

ojson cost_json(const Extras& x, const TraceSummary& t) {
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

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void print_table(const std::string& trace, const TraceSummary& r, const AnalysisOptions& o) {
  std::printf(
      "flexwatt analyze: %s (%s), %zu GPU%s, budget %.1f W per %s\n", trace.c_str(),
      r.format.c_str(), r.gpus.size(), r.gpus.size() == 1 ? "" : "s", o.budget_w,
      o.scope == AnalysisScope::kGpu ? "GPU" : (o.scope == AnalysisScope::kJob ? "job" : "node"));
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
    std::printf("\ntokens %.0f, tokens per MWh %s\n", *r.tokens,
                r.tokens_per_mwh ? fmt("%.4g", *r.tokens_per_mwh).c_str() : "-");
  } else {
    std::printf("\ntokens: none (no jobs.csv with tokens_total)\n");
  }
  std::printf(
      "(- : not judged: the budget applies to the %s; or no window with enough data)\n",
      o.scope == AnalysisScope::kGpu ? "GPUs" : (o.scope == AnalysisScope::kJob ? "jobs" : "node"));
}

void print_extras(const TraceSummary& t, const Extras& x) {
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
  std::printf(
      "\noversubscription (node, %g s windows, tolerance %g): provisioned %s W over %lld "
      "windows",
      x.oversub_window_s, x.oversub_tolerance, fmt("%.1f", ov.provisioned_w).c_str(),
      static_cast<long long>(ov.windows));
  if (std::isfinite(ov.ratio)) {
    std::printf(" = %.1f %% of nameplate %.0f W (%s); supported ratio %.2fx\n",
                100 * ov.share_of_nameplate, ov.nameplate_w, x.nameplate_source.c_str(), ov.ratio);
  } else {
    std::printf("; ratio: - (no nameplate: give --nameplate-w)\n");
  }
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

// Nameplate per GPU: --nameplate-w, else meta.json "nameplate_w", else the simulator's
// preset of the GPU models in meta.json (mixed models: their mean, so the node's sum is right).
void resolve_nameplate(const TraceSummary& t, double flag_w, Extras& x) {
  if (std::isfinite(flag_w)) {
    x.nameplate_w = flag_w;
    x.nameplate_source = "--nameplate-w";
    return;
  }
  if (std::isfinite(t.meta_nameplate_w)) {
    x.nameplate_w = t.meta_nameplate_w;
    x.nameplate_source = "meta.json nameplate_w";
    return;
  }
  if (t.gpu_models.empty()) return;
  double sum = 0;
  for (const std::string& m : t.gpu_models) {
    const sim::GpuPreset* p = sim::find_gpu_preset(m);
    if (p == nullptr) return;
    sum += p->tdp_w;
  }
  x.nameplate_w = sum / static_cast<double>(t.gpu_models.size());
  x.nameplate_source = "meta.json gpu_models (" + t.gpu_models.front() +
                       (t.gpu_models.size() > 1 ? ", ..." : "") + ")";
}

void compute_extras(TraceSummary& t, const AnalysisOptions& o, double flag_nameplate_w, Extras& x) {
  resolve_nameplate(t, flag_nameplate_w, x);
  const double np = x.nameplate_w;
  t.node.nameplate_w = np * static_cast<double>(t.gpus.size());
  for (auto& g : t.gpus) g.nameplate_w = np;
  for (auto& j : t.jobs) j.nameplate_w = np * static_cast<double>(j.gpu_count);
  x.curve_series.push_back(&t.node);
  for (const auto& j : t.jobs) x.curve_series.push_back(&j);
  if (o.scope == AnalysisScope::kGpu) {
    for (const auto& g : t.gpus) x.curve_series.push_back(&g);
  }
  for (const SeriesSummary* s : x.curve_series) {
    x.curves.push_back(windows_curve(s->curve, x.curve_tolerance));
  }
  x.node_oversub = oversubscription(t.node.oversub_means, x.oversub_window_s, x.oversub_tolerance,
                                    t.node.nameplate_w);
  for (const auto& j : t.jobs) {
    x.job_oversub.push_back(
        oversubscription(j.oversub_means, x.oversub_window_s, x.oversub_tolerance, j.nameplate_w));
  }
  CostInputs in;
  in.energy_j = t.node.energy_j;
  in.mean_power_w = t.node.mean_power_w;
  in.tokens = t.tokens;
  in.nameplate_per_gpu_w = np;
  in.oversubscription_ratio = x.node_oversub.ratio;
  x.cost_report = cost_report(in, x.cost);
}

Status parse_list(const std::string& s, const char* flag, std::vector<double>& out) {
  out.clear();
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t c = s.find(',', pos);
    const std::string item = s.substr(pos, c == std::string::npos ? std::string::npos : c - pos);
    double v;
    if (!parse_double(item, v)) {
      return Status::InvalidArgument(std::string(flag) + ": not a number: '" + item + "'");
    }
    out.push_back(v);
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return Status::Ok();
}

int run(int argc, char** argv) {
  CLI::App app(
      "Energy, peak power and windowed budget violations of a power trace, per GPU "
      "and for the node.\n\n"
      "TRACE is a flexwatt trace directory (gpus.csv, jobs.csv, meta.json), a lone\n"
      "gpus.csv-style file, or an nvidia-smi --query-gpu=... --format=csv log (units in\n"
      "cells or nounits); the format is detected from the header. Rules for gaps,\n"
      "duplicates and unsorted rows: docs/analysis.md.\n\n"
      "Example:\n"
      "  flexwatt analyze data/examples/trace --budget-w 2400 --windows 0.5,10,30\n"
      "  flexwatt analyze data/examples/nvsmi_8gpu.csv --budget-w 650 --scope gpu "
      "--nameplate-w 700 --json\n"
      "  flexwatt analyze /tmp/trace --budget-w 640 --scope job --oversub-window-s 30 "
      "--oversub-tolerance 0.01 --price-per-kwh 0.12\n\n"
      "Besides the summary: the violation rate against window length (--curve-windows) and\n"
      "the shortest window at which the budget holds; the oversubscription ratio the trace\n"
      "supports; energy cost, emissions and GPUs per MW. docs/analysis.md, docs/operators.md.",
      "analyze");
  std::string trace, windows = "0.5,10,30,300", scope = "node", gpus;
  double budget_w = 0, nameplate_w = kUnset;
  int nvsmi_gpus = 0;
  bool json = false;
  app.add_option("TRACE", trace, "trace directory, gpus.csv-style file or nvidia-smi CSV log")
      ->required();
  app.add_option("--budget-w", budget_w, "power budget in watts (> 0)")->required();
  app.add_option("--scope", scope,
                 "what the budget applies to: gpu (each GPU), node (the sum) or job (each job's "
                 "GPUs, from meta.json)")
      ->capture_default_str();
  app.add_option("--windows", windows, "comma-separated window lengths in seconds")
      ->capture_default_str();
  app.add_option("--nameplate-w", nameplate_w,
                 "nameplate (TDP) power of one GPU in watts; the node's is this × GPUs");
  app.add_option("--gpus", gpus, "comma-separated GPU indices the trace must hold only");
  app.add_option("--nvsmi-gpus", nvsmi_gpus,
                 "nvidia-smi logs without an index column: GPUs per query loop (default: detect)");
  std::string curve_windows;
  Extras x;
  app.add_option("--curve-windows", curve_windows,
                 "windows of the violation-rate curve, comma-separated (default "
                 "0.5,1,2,5,10,15,30,60,120,300)");
  app.add_option("--curve-tolerance", x.curve_tolerance,
                 "violation rate (0..1) at which the budget still 'holds' on the curve")
      ->capture_default_str();
  app.add_option("--oversub-window-s", x.oversub_window_s, "window of the oversubscription figure")
      ->capture_default_str();
  app.add_option("--oversub-tolerance", x.oversub_tolerance,
                 "share of windows (0..1) allowed above the provisioned power")
      ->capture_default_str();
  app.add_option("--price-per-kwh", x.cost.price_per_kwh, "energy price, USD per kWh")
      ->capture_default_str();
  app.add_option("--kg-co2-per-kwh", x.cost.kg_co2_per_kwh, "grid carbon intensity")
      ->capture_default_str();
  app.add_flag("--json", json, "machine-readable output");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  AnalysisOptions o;
  o.budget_w = budget_w;
  o.nameplate_w = nameplate_w;
  if (scope == "gpu") {
    o.scope = AnalysisScope::kGpu;
  } else if (scope == "node") {
    o.scope = AnalysisScope::kNode;
  } else if (scope == "job") {
    o.scope = AnalysisScope::kJob;
  } else {
    return fail("analyze",
                Status::InvalidArgument("--scope: expected gpu, node or job, got '" + scope + "'"));
  }
  if (Status s = parse_list(windows, "--windows", o.windows_s); !s.ok()) return fail("analyze", s);
  o.windows_given = app.count("--windows") > 0;
  o.curve_windows_given = !curve_windows.empty();
  if (app.count("--nameplate-w") > 0 && !(nameplate_w > 0 && std::isfinite(nameplate_w))) {
    return fail("analyze", Status::InvalidArgument("--nameplate-w: must be a positive number of "
                                                   "watts (got " +
                                                   std::to_string(nameplate_w) + ")"));
  }
  if (!curve_windows.empty()) {
    if (Status s = parse_list(curve_windows, "--curve-windows", o.curve_windows_s); !s.ok()) {
      return fail("analyze", s);
    }
  }
  o.oversub_window_s = x.oversub_window_s;
  auto in_unit = [](double v) { return v >= 0 && v < 1; };  // false for NaN
  if (!in_unit(x.curve_tolerance)) {
    return fail("analyze", Status::InvalidArgument("--curve-tolerance: must be in [0, 1)"));
  }
  if (!in_unit(x.oversub_tolerance)) {
    return fail("analyze", Status::InvalidArgument("--oversub-tolerance: must be in [0, 1)"));
  }
  if (!(x.cost.price_per_kwh >= 0) || !std::isfinite(x.cost.price_per_kwh)) {
    return fail("analyze", Status::InvalidArgument("--price-per-kwh: must be >= 0"));
  }
  if (!(x.cost.kg_co2_per_kwh >= 0) || !std::isfinite(x.cost.kg_co2_per_kwh)) {
    return fail("analyze", Status::InvalidArgument("--kg-co2-per-kwh: must be >= 0"));
  }
  if (Status s = validate(o); !s.ok()) return fail("analyze", s);
  TraceReaderOptions ro;
  ro.nvsmi_gpus_per_tick = nvsmi_gpus;
  if (nvsmi_gpus < 0 || nvsmi_gpus > 64) {
    return fail("analyze", Status::InvalidArgument("--nvsmi-gpus: must be 0 (detect) or 1..64"));
  }
  if (!gpus.empty()) {
    std::vector<double> g;
    if (Status s = parse_list(gpus, "--gpus", g); !s.ok()) return fail("analyze", s);
    for (double v : g) {
      if (v < 0 || v != std::floor(v) || v > kMaxGpuIndex) {
        return fail("analyze",
                    Status::InvalidArgument("--gpus: not a GPU index: " + std::to_string(v)));
      }
      ro.gpus.push_back(static_cast<int>(v));
    }
  }

  Result<TraceSummary> r = analyze_trace(trace, o, ro);
  if (!r.ok()) return fail("analyze", r.status());
  TraceSummary& t = *r;
  compute_extras(t, o, nameplate_w, x);
  if (json) {
    ojson j;
    j["format"] = t.format;
    j["budget_w"] = o.budget_w;
    j["scope"] = o.scope == AnalysisScope::kGpu   ? "gpu"
                 : o.scope == AnalysisScope::kJob ? "job"
                                                  : "node";
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
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(trace, t, o);
    print_extras(t, x);
  }
  for (const std::string& w : t.warnings) std::fprintf(stderr, "analyze: warning: %s\n", w.c_str());
  if (t.warning_count > static_cast<int64_t>(t.warnings.size())) {
    std::fprintf(
        stderr, "analyze: warning: %lld more warnings not shown\n",
        static_cast<long long>(t.warning_count) - static_cast<long long>(t.warnings.size()));
  }
  return 0;
}

}  // namespace

FW_VERB("analyze", "energy, peaks and windowed budget violations of a power trace", run);

}  // namespace fw::cli

// flexwatt analyze: energy, peaks and windowed budget violations of a power trace.

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/trace_analysis.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"

namespace fw::cli {
namespace {

using ojson = nlohmann::ordered_json;

ojson num_or_null(double v) { return std::isfinite(v) ? ojson(v) : ojson(nullptr); }

ojson series_json(const SeriesSummary& s) {
  ojson j;
  j["gpu"] = s.gpu < 0 ? ojson("node") : ojson(s.gpu);
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

std::string fmt(const char* f, double v) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

void print_table(const std::string& trace, const TraceSummary& r, const AnalysisOptions& o) {
  std::printf("flexwatt analyze: %s (%s), %zu GPU%s, budget %.1f W per %s\n", trace.c_str(),
              r.format.c_str(), r.gpus.size(), r.gpus.size() == 1 ? "" : "s", o.budget_w,
              o.scope == AnalysisScope::kGpu ? "GPU" : "node");
  std::printf(
      "rows %lld, duplicates dropped %lld, unsorted rows %lld%s, power [N/A] rows %lld, "
      "incomplete ticks %lld\n\n",
      static_cast<long long>(r.rows), static_cast<long long>(r.duplicates),
      static_cast<long long>(r.unsorted_rows), r.sorted_in_memory ? " (sorted)" : "",
      static_cast<long long>(r.missing_power_rows), static_cast<long long>(r.incomplete_ticks));
  std::printf("%-6s %9s %11s %14s %-10s %10s %10s %9s %5s %8s\n", "series", "samples", "duration_s",
              "energy_j", "source", "mean_w", "peak_w", "period_s", "gaps", "gap_s");
  auto row = [](const SeriesSummary& s) {
    const std::string name = s.gpu < 0 ? "node" : "gpu" + std::to_string(s.gpu);
    std::printf("%-6s %9lld %11.3f %14.1f %-10s %10.2f %10.2f %9.4f %5lld %8.3f\n", name.c_str(),
                static_cast<long long>(s.samples), s.duration_s, s.energy_j,
                s.energy_source.c_str(), s.mean_power_w, s.peak_power_w, s.period_s,
                static_cast<long long>(s.gaps), s.gap_s);
  };
  row(r.node);
  for (const auto& g : r.gpus) row(g);
  std::printf("\n%-6s %9s %8s %10s %12s %11s %14s %10s\n", "series", "window_s", "windows",
              "violations", "viol_rate", "peak_mean_w", "over_budget_j", "peak/nameplate");
  auto wrow = [](const SeriesSummary& s) {
    const std::string name = s.gpu < 0 ? "node" : "gpu" + std::to_string(s.gpu);
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
  if (r.tokens) {
    std::printf("\ntokens %.0f, tokens per MWh %s\n", *r.tokens,
                r.tokens_per_mwh ? fmt("%.4g", *r.tokens_per_mwh).c_str() : "-");
  } else {
    std::printf("\ntokens: none (no jobs.csv with tokens_total)\n");
  }
  std::printf("(- : not judged: the budget applies to the %s; or no window with enough data)\n",
              o.scope == AnalysisScope::kGpu ? "GPUs" : "node");
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
      "--nameplate-w 700 --json",
      "analyze");
  std::string trace, windows = "0.5,10,30,300", scope = "node", gpus;
  double budget_w = 0, nameplate_w = kUnset;
  int nvsmi_gpus = 0;
  bool json = false;
  app.add_option("TRACE", trace, "trace directory, gpus.csv-style file or nvidia-smi CSV log")
      ->required();
  app.add_option("--budget-w", budget_w, "power budget in watts (> 0)")->required();
  app.add_option("--scope", scope, "what the budget applies to: gpu (each GPU) or node (the sum)")
      ->capture_default_str();
  app.add_option("--windows", windows, "comma-separated window lengths in seconds")
      ->capture_default_str();
  app.add_option("--nameplate-w", nameplate_w,
                 "nameplate (TDP) power of one GPU in watts; the node's is this × GPUs");
  app.add_option("--gpus", gpus, "comma-separated GPU indices the trace must hold only");
  app.add_option("--nvsmi-gpus", nvsmi_gpus,
                 "nvidia-smi logs without an index column: GPUs per query loop (default: detect)");
  app.add_flag("--json", json, "machine-readable output");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  AnalysisOptions o;
  o.budget_w = budget_w;
  o.nameplate_w = nameplate_w;
  if (scope == "gpu") {
    o.scope = AnalysisScope::kGpu;
  } else if (scope == "node") {
    o.scope = AnalysisScope::kNode;
  } else {
    return fail("analyze",
                Status::InvalidArgument("--scope: expected gpu or node, got '" + scope + "'"));
  }
  if (Status s = parse_list(windows, "--windows", o.windows_s); !s.ok()) return fail("analyze", s);
  if (Status s = validate(o); !s.ok()) return fail("analyze", s);
  TraceReaderOptions ro;
  ro.nvsmi_gpus_per_tick = nvsmi_gpus;
  if (nvsmi_gpus < 0) {
    return fail("analyze", Status::InvalidArgument("--nvsmi-gpus: must be >= 0"));
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
  const TraceSummary& t = *r;
  if (json) {
    ojson j;
    j["format"] = t.format;
    j["budget_w"] = o.budget_w;
    j["scope"] = o.scope == AnalysisScope::kGpu ? "gpu" : "node";
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
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print_table(trace, t, o);
  }
  return 0;
}

}  // namespace

FW_VERB("analyze", "energy, peaks and windowed budget violations of a power trace", run);

}  // namespace fw::cli

// flexwatt analyze: energy, peaks and windowed budget violations of a power trace.
// Flags -> AnalysisOptions -> analyze_trace + compute_extras (analysis/) -> print
// (cli/analyze_report.hpp).

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/trace_report.hpp"
#include "cli/analyze_report.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"

namespace fw::cli {
namespace {

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
  TraceExtras x;
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
    std::printf(
        "%s\
",
        analyze_json(t, o, x).dump(2).c_str());
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

// flexwatt analyze: energy, peaks and windowed budget violations of a power trace.
// Flags -> AnalysisOptions -> analyze_trace + compute_extras (analysis/) -> print
// (analysis/analyze_report.hpp).

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/analyze_report.hpp"
#include "analysis/trace_report.hpp"
#include "cli/analyze_stability.hpp"
#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"

namespace fw::cli {
namespace {

constexpr const char* kHelp =
    "Energy, peak power and windowed budget violations of a power trace, per GPU "
    "and for the node.\n\n"
    "TRACE is a flexwatt trace directory (gpus.csv, jobs.csv, meta.json), a lone\n"
    "gpus.csv-style file, an nvidia-smi --query-gpu=... --format=csv log (units in\n"
    "cells or nounits) or dcgmi dmon -e 155,156 output (with --dmon-period-s); the\n"
    "format is detected from the header; - reads standard input (a pipe: rows must\n"
    "be in time order). Rules for gaps, duplicates and unsorted rows:\n"
    "docs/analysis.md.\n\n"
    "Without --budget-w: the summary, and for each window length the smallest budget no\n"
    "window exceeded, with the oversubscription headroom (budgets to start from).\n\n"
    "Example:\n"
    "  flexwatt analyze data/examples/trace\n"
    "  flexwatt analyze data/examples/trace --budget-w 2400 --windows 0.5,10,30\n"
    "  flexwatt analyze data/examples/nvsmi_8gpu.csv --budget-w 650 --scope gpu "
    "--nameplate-w 700 --json\n"
    "  flexwatt analyze /tmp/trace --budget-w 640 --scope job --oversub-window-s 30 "
    "--oversub-tolerance 0.01 --price-per-kwh 0.12\n\n"
    "Besides the summary: the violation rate against window length (--curve-windows) and\n"
    "the shortest window at which the budget holds; the oversubscription ratio the trace\n"
    "supports; energy cost, emissions and GPUs per MW. docs/analysis.md, docs/operators.md.\n\n"
    "--stability: ramp rates, swings and band energy of the node's or a site's power\n"
    "(flexwatt analyze --stability --help; docs/stability.md).";

struct Flags {
  std::string trace, windows = "0.5,10,30,300", scope = "node", gpus, curve_windows;
  double budget_w = kUnset, nameplate_w = kUnset, dmon_period_s = kUnset;
  int nvsmi_gpus = 0, parse_threads = 0;
  bool json = false;
  TraceExtras x;
};

void add_flags(CLI::App& app, Flags& f) {
  app.add_option("TRACE", f.trace,
                 "trace directory, gpus.csv-style file, nvidia-smi CSV log or - (standard input)")
      ->required();
  app.add_option("--budget-w", f.budget_w,
                 "power budget in watts (> 0); without it: the summary and proposed budgets");
  app.add_option("--scope", f.scope,
                 "what the budget applies to: gpu (each GPU), node (the sum) or job (each job's "
                 "GPUs, from meta.json)")
      ->capture_default_str();
  app.add_option("--windows", f.windows, "comma-separated window lengths in seconds")
      ->capture_default_str();
  app.add_option("--nameplate-w", f.nameplate_w,
                 "nameplate (TDP) power of one GPU in watts; the node's is this × GPUs");
  app.add_option("--gpus", f.gpus, "comma-separated GPU indices the trace must hold only");
  app.add_option("--nvsmi-gpus", f.nvsmi_gpus,
                 "nvidia-smi logs without an index column: GPUs per query loop (default: detect)");
  app.add_option("--dmon-period-s", f.dmon_period_s,
                 "dcgmi dmon logs without a time column: seconds between samples (-d ms / 1000)");
  app.add_option("--parse-threads", f.parse_threads,
                 "threads parsing a flexwatt trace: 1, 2, or 0 = 2 for files >= 16 MB");
  app.add_option("--curve-windows", f.curve_windows,
                 "windows of the violation-rate curve, comma-separated (default "
                 "0.5,1,2,5,10,15,30,60,120,300)");
  app.add_option("--curve-tolerance", f.x.curve_tolerance,
                 "violation rate (0..1) at which the budget still 'holds' on the curve")
      ->capture_default_str();
  app.add_option("--oversub-window-s", f.x.oversub_window_s,
                 "window of the oversubscription figure")
      ->capture_default_str();
  app.add_option("--oversub-tolerance", f.x.oversub_tolerance,
                 "share of windows (0..1) allowed above the provisioned power")
      ->capture_default_str();
  app.add_option("--price-per-kwh", f.x.cost.price_per_kwh, "energy price, USD per kWh")
      ->capture_default_str()
      ->check(finite_in(0, 1000));
  app.add_option("--kg-co2-per-kwh", f.x.cost.kg_co2_per_kwh, "grid carbon intensity")
      ->capture_default_str()
      ->check(finite_in(0, 10));
  app.add_flag("--json", f.json, "machine-readable output");
}

// Flags -> options, every value checked (InvalidArgument naming the flag).
Status build_request(const CLI::App& app, const Flags& f, AnalysisOptions& o,
                     TraceReaderOptions& ro) {
  // NaN is "not given" in the options: a given nan must fail the range check.
  o.budget_w = app.count("--budget-w") && std::isnan(f.budget_w) ? -1 : f.budget_w;
  o.nameplate_w = f.nameplate_w;
  if (!scope_from_name(f.scope, o.scope)) {
    return Status::InvalidArgument("--scope: expected gpu, node or job, got '" + f.scope + "'");
  }
  FW_RETURN_IF_ERROR(parse_double_list(f.windows, "--windows", o.windows_s));
  o.windows_given = app.count("--windows") > 0;
  o.curve_windows_given = !f.curve_windows.empty();
  if (app.count("--nameplate-w") > 0 && !(f.nameplate_w >= 1 && f.nameplate_w <= kMaxGpuPowerW)) {
    return Status::InvalidArgument("--nameplate-w: must be 1..5000 W of one GPU (got " +
                                   fmt::format("{:g}", f.nameplate_w) + ")");
  }
  if (o.curve_windows_given) {
    FW_RETURN_IF_ERROR(parse_double_list(f.curve_windows, "--curve-windows", o.curve_windows_s));
  }
  o.oversub_window_s = f.x.oversub_window_s;
  FW_RETURN_IF_ERROR(validate(f.x));
  FW_RETURN_IF_ERROR(validate(o));
  ro.nvsmi_gpus_per_tick = f.nvsmi_gpus;
  ro.parse_threads = f.parse_threads;
  // NaN is "not given" in the options: a given nan must fail the range check.
  ro.dmon_period_s =
      app.count("--dmon-period-s") && std::isnan(f.dmon_period_s) ? -1 : f.dmon_period_s;
  FW_RETURN_IF_ERROR(validate(ro));
  if (f.gpus.empty()) return Status::Ok();
  return parse_gpu_indices(f.gpus, ro.gpus);
}

int run(int argc, char** argv) {
  if (wants_stability(argc, argv)) return run_analyze_stability(argc, argv);
  CLI::App app(kHelp, "analyze");
  Flags f;
  add_flags(app, f);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  AnalysisOptions o;
  TraceReaderOptions ro;
  if (Status s = build_request(app, f, o, ro); !s.ok()) return fail("analyze", s);

  if (f.trace == "-") f.trace = "/dev/stdin";
  Result<TraceSummary> r = analyze_trace(f.trace, o, ro);
  if (!r.ok()) return fail("analyze", r.status());
  TraceSummary& t = *r;
  compute_extras(t, o, f.nameplate_w, f.x);
  if (f.json) {
    std::printf("%s\n", analyze_json(t, o, f.x).dump(2).c_str());
  } else {
    print_table(f.trace, t, o);
    print_extras(t, f.x);
    if (std::isnan(o.budget_w)) print_proposal(o, f.x);
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

// flexwatt analyze --stability: flags -> StabilityOptions / StabilityLimits -> load_power_series
// + analyze_stability (+ compare_with_reference, check_limits) -> stability_json / _text.

#include "cli/analyze_stability.hpp"

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/power_series.hpp"
#include "analysis/stability.hpp"
#include "analysis/stability_limits.hpp"
#include "analysis/stability_report.hpp"
#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/csv.hpp"

namespace fw::cli {
namespace {

constexpr const char* kHelp =
    "Power stability of a node or a site: ramp rates, peak-to-trough swings and the share of\n"
    "spectral energy in a band (issue #48; definitions: docs/stability.md).\n\n"
    "TRACE is any trace analyze reads (a flexwatt trace directory or gpus.csv-style file,\n"
    "an nvidia-smi CSV log, dcgmi dmon output): the node's power, the sum over its GPUs; or a\n"
    "site power CSV with the columns time_s,power_w. Uneven sampling is resampled to a\n"
    "uniform grid of the median step by linear interpolation (gaps are bridged and reported).\n\n"
    "- ramp over W: (mean of the last W s - mean of the W s before) / W, in W/s and % of the\n"
    "  trace's peak per second; max up and max down over the trace;\n"
    "- swing over W: max - min within any W s (sliding): max and 95th percentile;\n"
    "- band energy: periodogram (linear detrend, Hann window) share in --band; a trace sampled\n"
    "  every dt s sees up to 1/(2 dt) Hz (a 2 Hz log: 1 Hz), and the band is clipped there;\n"
    "- --reference: energy overhead and throughput loss (tokens in jobs.csv) against the same\n"
    "  job run unmitigated.\n\n"
    "Exit codes: 0 every limit given held (or none given), 1 a limit was violated (the report\n"
    "is still printed), 2 bad usage or bad input (file, line and field named).\n\n"
    "Example:\n"
    "  flexwatt analyze --stability data/examples/trace\n"
    "  flexwatt analyze --stability site.csv --band 0.1,5 --max-ramp-frac-per-s 0.1 --json\n"
    "  flexwatt analyze --stability mitigated/ --reference unmitigated/ --max-band-frac 0.2";

struct Flags {
  std::string trace, reference, gpus;
  std::string ramp_windows = "0.1,1,10,60", swing_windows = "1,10,60", band = "0.1,5";
  bool stability = false, json = false;
  int nvsmi_gpus = 0;
  double dmon_period_s = kUnset;
  StabilityLimits limits;
};

void add_flags(CLI::App& app, Flags& f) {
  app.add_flag("--stability", f.stability, "the stability analysis (this help)")->required();
  app.add_option("TRACE", f.trace,
                 "trace directory, gpus.csv-style file, nvidia-smi CSV, dcgmi dmon output or "
                 "a time_s,power_w site CSV")
      ->required();
  app.add_option("--reference", f.reference,
                 "the same job run unmitigated (any TRACE format): energy overhead, throughput "
                 "loss");
  app.add_option("--ramp-windows", f.ramp_windows, "ramp windows in seconds, comma-separated")
      ->capture_default_str();
  app.add_option("--swing-windows", f.swing_windows, "swing windows in seconds, comma-separated")
      ->capture_default_str();
  app.add_option("--band", f.band, "frequency band LO,HI in Hz for the band energy share")
      ->capture_default_str();
  app.add_option("--max-ramp-w-per-s", f.limits.max_ramp_w_per_s,
                 "limit: largest ramp (up or down) at --limit-window-s, W/s; exit 1 above it")
      ->check(finite_in(0, 1e12, true));
  app.add_option("--max-ramp-frac-per-s", f.limits.max_ramp_frac_per_s,
                 "limit: largest ramp at --limit-window-s as a fraction of peak per second "
                 "(0.1 = 10 %/s); exit 1 above it")
      ->check(finite_in(0, 1000, true));
  app.add_option("--max-band-frac", f.limits.max_band_frac,
                 "limit: share (0..1) of spectral energy in --band; exit 1 above it")
      ->check(finite_in(0, 1));
  app.add_option("--limit-window-s", f.limits.window_s,
                 "the ramp window the ramp limits judge (added to --ramp-windows)")
      ->capture_default_str()
      ->check(finite_in(0, 1e6, true));
  app.add_option("--gpus", f.gpus, "comma-separated GPU indices the trace must hold only");
  app.add_option("--nvsmi-gpus", f.nvsmi_gpus,
                 "nvidia-smi logs without an index column: GPUs per query loop (default: detect)");
  app.add_option("--dmon-period-s", f.dmon_period_s,
                 "dcgmi dmon logs without a time column: seconds between samples");
  app.add_flag("--json", f.json, "machine-readable output");
}

Status build_request(const CLI::App& app, const Flags& f, StabilityOptions& o,
                     TraceReaderOptions& ro) {
  FW_RETURN_IF_ERROR(parse_double_list(f.ramp_windows, "--ramp-windows", o.ramp_windows_s));
  FW_RETURN_IF_ERROR(parse_double_list(f.swing_windows, "--swing-windows", o.swing_windows_s));
  std::vector<double> band;
  FW_RETURN_IF_ERROR(parse_double_list(f.band, "--band", band));
  if (band.size() != 2) {
    return Status::InvalidArgument("--band: expected LO,HI in Hz (got '" + f.band + "')");
  }
  o.band_lo_hz = band[0];
  o.band_hi_hz = band[1];
  const bool ramp_limit =
      !std::isnan(f.limits.max_ramp_w_per_s) || !std::isnan(f.limits.max_ramp_frac_per_s);
  if (ramp_limit) {
    bool present = false;
    for (double w : o.ramp_windows_s) present |= w == f.limits.window_s;
    if (!present) o.ramp_windows_s.push_back(f.limits.window_s);
  }
  FW_RETURN_IF_ERROR(validate(o));
  FW_RETURN_IF_ERROR(validate(f.limits));
  ro.nvsmi_gpus_per_tick = f.nvsmi_gpus;
  ro.dmon_period_s =
      app.count("--dmon-period-s") && std::isnan(f.dmon_period_s) ? -1 : f.dmon_period_s;
  FW_RETURN_IF_ERROR(validate(ro));
  if (f.gpus.empty()) return Status::Ok();
  return parse_gpu_indices(f.gpus, ro.gpus);
}

}  // namespace

bool wants_stability(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--stability") return true;
  }
  return false;
}

int run_analyze_stability(int argc, char** argv) {
  CLI::App app(kHelp, "analyze");
  Flags f;
  add_flags(app, f);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  StabilityOptions o;
  TraceReaderOptions ro;
  if (Status s = build_request(app, f, o, ro); !s.ok()) return fail("analyze", s);

  Result<PowerSeries> series = load_power_series(f.trace, ro);
  if (!series.ok()) return fail("analyze", series.status());
  Result<StabilityReport> r = analyze_stability(*series, o);
  if (!r.ok()) return fail("analyze", r.status());
  std::optional<ReferenceComparison> ref;
  if (!f.reference.empty()) {
    Result<PowerSeries> rs = load_power_series(f.reference, ro);
    if (!rs.ok()) return fail("analyze", rs.status().with_context("--reference"));
    Result<ReferenceComparison> c = compare_with_reference(*series, *rs);
    if (!c.ok()) return fail("analyze", c.status().with_context("--reference"));
    ref = *c;
  }
  Result<std::vector<LimitCheck>> checks = check_limits(*r, f.limits);
  if (!checks.ok()) return fail("analyze", checks.status());

  if (f.json) {
    std::printf("%s\n", stability_json(*r, ref, *checks).dump(2).c_str());
  } else {
    std::fputs(stability_text(*r, ref, *checks).c_str(), stdout);
  }
  for (const std::string& w : series->warnings) {
    std::fprintf(stderr, "analyze: warning: %s\n", w.c_str());
  }
  int rc = 0;
  for (const LimitCheck& c : *checks) {
    if (!c.violated) continue;
    std::fprintf(stderr, "flexwatt analyze: limit violated: %s = %.6g > %.6g\n", c.name.c_str(),
                 c.value, c.limit);
    rc = 1;
  }
  return rc;
}

}  // namespace fw::cli

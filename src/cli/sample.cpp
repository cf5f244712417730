// flexwatt sample: records a trace of per-GPU readings from NVML on a drift-free schedule.
// Read-only: it never changes a GPU setting. The loop is runtime/trace_sampler.hpp.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/verb.hpp"
#include "core/csv.hpp"
#include "runtime/stop_signals.hpp"
#include "runtime/trace_sampler.hpp"
#include "telemetry/nvml_source.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw::cli {
namespace {

// "0,1,3" -> indices. InvalidArgument on anything else.
Result<std::vector<int>> parse_gpu_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    int64_t v = 0;
    if (!parse_int64(item, v) || v < 0 || v > 1'000'000) {
      return Status::InvalidArgument("--gpus: '" + item + "' is not a GPU index");
    }
    if (std::find(out.begin(), out.end(), v) != out.end()) {
      return Status::InvalidArgument("--gpus: GPU " + item + " listed twice");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return Status::InvalidArgument("--gpus: empty list");
  return out;
}

// Long by design: mostly flag declarations; the work is runtime/trace_sampler.
int run_sample(int argc, char** argv) {
  CLI::App app(
      "Record per-GPU power and telemetry from NVML into a trace directory, on a "
      "drift-free schedule (absolute deadlines). Read-only: never changes a GPU "
      "setting.\n\nExample:\n  flexwatt sample --interval-s 0.5 --duration-s 60 "
      "--out traces/run1 --gpus 0,1\n\nEnvironment: FLEXWATT_NVML_LIBRARY=PATH loads "
      "that NVML library instead of libnvidia-ml.so.1.",
      "sample");
  double interval_s = 0.5;
  double duration_s = 60;
  std::string out_dir;
  std::string gpus_arg;
  bool json = false;
  app.add_option("--interval-s", interval_s, "seconds between ticks (> 0)")->capture_default_str();
  app.add_option("--duration-s", duration_s, "seconds to record (>= interval)")
      ->capture_default_str();
  app.add_option("--out", out_dir, "trace directory to write (gpus.csv, meta.json)")->required();
  app.add_option("--gpus", gpus_arg, "comma-separated NVML GPU indices (default: all)");
  app.add_flag("--json", json, "print the final report as JSON on stdout");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  if (!std::isfinite(interval_s) || interval_s <= 0) {
    return fail("sample", Status::InvalidArgument("--interval-s must be a positive number"));
  }
  if (!std::isfinite(duration_s) || duration_s < interval_s) {
    return fail("sample", Status::InvalidArgument("--duration-s must be at least --interval-s"));
  }
  std::vector<int> gpus;
  if (!gpus_arg.empty()) {
    auto g = parse_gpu_list(gpus_arg);
    if (!g.ok()) return fail("sample", g.status());
    gpus = std::move(g).value();
  }

  auto lib = nvml::NvmlLibrary::load();
  if (!lib.ok()) {  // no NVML is a usage-level problem on this machine: exit code 2
    std::fprintf(stderr, "flexwatt sample: %s\n", lib.status().message().c_str());
    return 2;
  }
  auto opened = NvmlGpuSource::open(std::move(lib).value(), gpus);
  if (!opened.ok()) return fail("sample", opened.status());
  NvmlGpuSource& src = *opened.value();
  if (src.device_count() == 0) {
    std::fprintf(stderr, "flexwatt sample: NVML reports no GPUs\n");
    return 2;
  }
  if (gpus.empty()) {
    for (int i = 0; i < src.device_count(); ++i) gpus.push_back(i);
  }

  auto writer = TraceWriter::create(out_dir, TraceWriterOptions::real_time());
  if (!writer.ok()) return fail("sample", writer.status());

  SamplerRequest req;
  req.interval_s = interval_s;
  req.duration_s = duration_s;
  req.gpus = gpus;
  req.progress = stderr_is_tty();
  SamplerResult r;
  {
    StopSignals signals;
    SteadyClock clock;
    r = run_sampler(src, *writer.value(), req, clock, &StopSignals::requested);
  }
  const Status closed = writer.value()->close(sample_meta_json(src, req, r, src.library().path()));
  if (!r.read_status.ok()) {
    return fail("sample", r.read_status.with_context("stopped after " + std::to_string(r.taken) +
                                                     " ticks (partial trace in " + out_dir + ")"));
  }
  if (!closed.ok()) return fail("sample", closed);

  const SampleSources sources = sample_sources(src, gpus);
  if (json) {
    nlohmann::json report = {
        {"out", out_dir},
        {"samples", r.taken},
        {"rows", r.taken * static_cast<int64_t>(gpus.size()) - r.implausible_rows},
        {"missed_ticks", r.missed},
        {"implausible_rows", r.implausible_rows},
        {"implausible_fields", r.implausible_fields},
        {"ticks_planned", r.planned},
        {"interval_s", interval_s},
        {"gpus", gpus},
        {"power_source", sources.power},
        {"energy_source", sources.energy},
        {"max_lateness_s", r.max_lateness_s},
        {"interrupted", r.interrupted}};
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf(
        "sample: %lld ticks x %zu GPU(s) -> %s; %lld missed ticks (interval %g s); "
        "power: %s, energy: %s%s\n",
        static_cast<long long>(r.taken), gpus.size(), out_dir.c_str(),  // NOLINT
        static_cast<long long>(r.missed), interval_s,                   // NOLINT
        sources.power.c_str(), sources.energy.c_str(), r.interrupted ? " (interrupted)" : "");
    if (r.implausible_rows + r.implausible_fields > 0) {
      std::printf(
          "sample: implausible readings (a driver glitch?): %lld GPU rows left out, %lld "
          "fields written empty\n",
          static_cast<long long>(r.implausible_rows),     // NOLINT
          static_cast<long long>(r.implausible_fields));  // NOLINT
    }
  }
  return r.interrupted ? 1 : 0;
}

}  // namespace

FW_VERB("sample", "record a per-GPU power trace from NVML (read-only)", run_sample);

}  // namespace fw::cli

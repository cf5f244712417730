// flexwatt sample: records a trace of per-GPU readings from NVML on a drift-free schedule.
// Read-only: it never changes a GPU setting.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/verb.hpp"
#include "core/csv.hpp"
#include "core/version.hpp"
#include "telemetry/nvml_source.hpp"
#include "telemetry/tick_schedule.hpp"
#include "telemetry/trace_writer.hpp"

namespace fw::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

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

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));  // NOLINT
  return buf;
}

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

  auto lib = NvmlLibrary::load();
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

  auto writer = TraceWriter::create(out_dir);
  if (!writer.ok()) return fail("sample", writer.status());

  const int64_t planned = TickSchedule::ticks_in(duration_s, interval_s);
  TickSchedule sched(0.0, interval_s, planned);
  std::vector<uint64_t> reasons_seen(gpus.size(), 0);
  Snapshot snap;
  Status read_status;
  double max_late_s = 0;
  const bool tty = stderr_is_tty();
  double next_progress_s = 1.0;

  g_stop.store(false);
  auto old_int = std::signal(SIGINT, on_signal);
  auto old_term = std::signal(SIGTERM, on_signal);
  const auto wall_start = std::chrono::system_clock::now();
  const Clock::time_point t0 = Clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto at = [&](double s) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };

  while (!sched.done() && !g_stop.load()) {
    const Clock::time_point deadline = at(sched.deadline_s());
    // Sleep in slices so that a signal stops a long interval promptly.
    for (Clock::time_point now = Clock::now(); now < deadline && !g_stop.load();
         now = Clock::now()) {
      std::this_thread::sleep_until(std::min(deadline, now + std::chrono::milliseconds(200)));
    }
    if (g_stop.load()) break;
    const double now_s = seconds_since_start();
    max_late_s = std::max(max_late_s, now_s - sched.deadline_s());
    read_status = read_gpus(src, gpus, now_s, snap, &reasons_seen);
    if (!read_status.ok()) break;
    writer.value()->append(snap);
    sched.complete(seconds_since_start());
    if (tty && now_s >= next_progress_s) {
      std::fprintf(stderr, "\rsample: %.1f/%.1f s, %lld ticks, %lld missed", now_s, duration_s,
                   static_cast<long long>(sched.taken()),    // NOLINT
                   static_cast<long long>(sched.missed()));  // NOLINT
      next_progress_s = now_s + 1.0;
    }
  }
  const bool interrupted = g_stop.load() && read_status.ok();
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  if (tty) std::fprintf(stderr, "\n");

  // Meta.
  nlohmann::json devices = nlohmann::json::array();
  std::string power_source, energy_source;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuDeviceInfo& info = src.info(gpus[i]);
    const std::string ps(power_source_name(info.power_source));
    const std::string es(energy_source_name(info.energy_source));
    power_source = (i == 0 || power_source == ps) ? ps : "mixed";
    energy_source = (i == 0 || energy_source == es) ? es : "mixed";
    devices.push_back({{"gpu", gpus[i]},
                       {"name", info.name},
                       {"power_source", ps},
                       {"energy_source", es},
                       {"power_limit_min_w", info.min_limit_w},
                       {"power_limit_max_w", info.max_limit_w},
                       {"power_limit_default_w", info.default_limit_w},
                       {"unsupported", info.unsupported},
                       {"clock_event_reasons_seen", hex(reasons_seen[i])}});
  }
  nlohmann::json meta = {
      {"producer", "flexwatt sample"},
      {"flexwatt_version", kVersion},
      {"interval_s", interval_s},
      {"duration_s", duration_s},
      {"ticks_planned", planned},
      {"samples", sched.taken()},
      {"missed_ticks", sched.missed()},
      {"max_lateness_s", max_late_s},
      {"gpus", gpus},
      {"devices", devices},
      {"power_source", power_source},
      {"energy_source", energy_source},
      {"nvml_library", src.library().path()},
      {"start_unix_s", std::chrono::duration<double>(wall_start.time_since_epoch()).count()},
      {"time_base", "time_s: seconds on a steady clock since the first deadline"},
      {"interrupted", interrupted},
  };
  if (!read_status.ok()) meta["error"] = read_status.message();
  const Status closed = writer.value()->close(meta);

  if (!read_status.ok()) {
    return fail("sample",
                read_status.with_context("stopped after " + std::to_string(sched.taken()) +
                                         " ticks (partial trace in " + out_dir + ")"));
  }
  if (!closed.ok()) return fail("sample", closed);

  if (json) {
    nlohmann::json report = {{"out", out_dir},
                             {"samples", sched.taken()},
                             {"rows", sched.taken() * static_cast<int64_t>(gpus.size())},
                             {"missed_ticks", sched.missed()},
                             {"ticks_planned", planned},
                             {"interval_s", interval_s},
                             {"gpus", gpus},
                             {"power_source", power_source},
                             {"energy_source", energy_source},
                             {"max_lateness_s", max_late_s},
                             {"interrupted", interrupted}};
    std::printf("%s\n", report.dump().c_str());
  } else {
    std::printf(
        "sample: %lld ticks x %zu GPU(s) -> %s; %lld missed ticks (interval %g s); "
        "power: %s, energy: %s%s\n",
        static_cast<long long>(sched.taken()), gpus.size(), out_dir.c_str(),  // NOLINT
        static_cast<long long>(sched.missed()), interval_s,                   // NOLINT
        power_source.c_str(), energy_source.c_str(), interrupted ? " (interrupted)" : "");
  }
  return interrupted ? 1 : 0;
}

}  // namespace

FW_VERB("sample", "record a per-GPU power trace from NVML (read-only)", run_sample);

}  // namespace fw::cli

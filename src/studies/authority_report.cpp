#include "studies/authority_report.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "analysis/json_fields.hpp"
#include "core/format.hpp"
#include "core/version.hpp"

namespace fw::studies {
namespace {

using ojson = nlohmann::ordered_json;

void appendf(std::string& out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string& out, const char* fmt, ...) {
  char b[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  out += b;
}

ojson num_or_null(double v) { return fw::num_or_null<ojson>(v); }

std::string pct(double f) { return format_percent(f); }

}  // namespace

nlohmann::ordered_json authority_json(const AuthorityReport& r, const sim::Scenario& s) {
  const AuthorityOptions& o = r.options;
  ojson j;
  j["simulated"] = r.simulated;
  j["scenario"] = s.name;
  j["scenario_path"] = s.path;
  j["overrides"] = s.overrides;
  j["version"] = kVersion;
  j["job"] = r.job;
  j["job_index"] = o.job;
  j["job_gpus"] = r.job_gpus;
  j["duration_s"] = o.duration_s;
  j["warmup_s"] = o.warmup_s;
  j["sample_period_s"] = o.sample_period_s;
  j["window_s"] = o.window_s;
  j["seed"] = o.seed;
  j["seeds"] = o.seeds;
  j["threshold"] = o.threshold;
  j["power_scope"] = "sum over the job's GPUs";
  j["swing_definition"] = "(max - min over settings) / figure at the knob's maximum setting";
  ojson ks = ojson::array();
  for (const auto& k : r.knobs) {
    ojson kj;
    kj["knob"] = std::string(kKnobNames[static_cast<int>(k.knob)]);
    kj["rank"] = k.rank;
    kj["has_authority"] = k.has_authority;
    kj["mean_power_swing"] = num_or_null(k.mean_swing);
    kj["peak_window_swing"] = num_or_null(k.peak_window_swing);
    kj["peak_sample_swing"] = num_or_null(k.peak_sample_swing);
    kj["throughput_ratio"] = num_or_null(k.throughput_ratio);
    ojson ps = ojson::array();
    for (const auto& p : k.points) {
      ps.push_back({{"value", p.value},
                    {"mean_power_w", p.mean_power_w},
                    {"peak_window_w", p.peak_window_w},
                    {"peak_sample_w", p.peak_sample_w},
                    {"tokens_per_s", p.tokens_per_s}});
    }
    kj["settings"] = std::move(ps);
    ks.push_back(std::move(kj));
  }
  j["knobs"] = std::move(ks);
  return j;
}

std::string format_authority_table(const AuthorityReport& r, const sim::Scenario& s) {
  std::string out;
  const AuthorityOptions& o = r.options;
  appendf(out,
          "flexwatt authority (%s): %s, job '%s' (%d GPU%s), %.0f s per run (warm-up %.0f s), "
          "%d seed%s from %llu\n",
          r.simulated ? "simulated" : "measured", s.name.c_str(), r.job.c_str(), r.job_gpus,
          r.job_gpus == 1 ? "" : "s", o.duration_s, o.warmup_s, o.seeds, o.seeds == 1 ? "" : "s",
          static_cast<unsigned long long>(o.seed));
  appendf(out,
          "power = sum over the job's GPUs; peak_win = largest %.0f s window mean, "
          "peak_smp = largest %.1f s sample\n",
          o.window_s, o.sample_period_s);
  for (const auto& k : r.knobs) {
    appendf(out, "\n%s\n", std::string(kKnobNames[static_cast<int>(k.knob)]).c_str());
    appendf(out, "  %8s %10s %12s %12s %12s\n", "setting", "mean_w", "peak_win_w", "peak_smp_w",
            "tokens/s");
    for (const auto& p : k.points) {
      appendf(out, "  %8g %10.1f %12.1f %12.1f %12.2f\n", p.value, p.mean_power_w, p.peak_window_w,
              p.peak_sample_w, p.tokens_per_s);
    }
  }
  appendf(out, "\n%4s %-16s %11s %14s %14s %11s %s\n", "rank", "knob", "mean_swing",
          "peak_win_swing", "peak_smp_swing", "tput_ratio", "authority");
  for (const auto& k : r.knobs) {
    appendf(out, "%4d %-16s %11s %14s %14s %10.2fx %s\n", k.rank,
            std::string(kKnobNames[static_cast<int>(k.knob)]).c_str(), pct(k.mean_swing).c_str(),
            pct(k.peak_window_swing).c_str(), pct(k.peak_sample_swing).c_str(), k.throughput_ratio,
            k.has_authority ? "yes" : "no");
  }
  appendf(out,
          "\nswing = (max - min over settings) / figure at the knob's maximum; authority = mean "
          "swing >= %.0f %%; tput_ratio = highest / lowest tokens/s. All figures simulated.\n",
          100 * o.threshold);
  return out;
}

Result<int> find_job(const sim::Scenario& s, const std::string& job) {
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    if (s.jobs[i].name == job || std::to_string(i) == job) return static_cast<int>(i);
  }
  return Status::InvalidArgument("no job '" + job + "' in " + s.path);
}

Result<Knob> knob_by_name(const std::string& name) {
  for (int i = 0; i < kNumKnobs; ++i) {
    if (kKnobNames[i] == name) return static_cast<Knob>(i);
  }
  return Status::InvalidArgument("unknown knob '" + name +
                                 "' (known: gen_concurrency, group_size)");
}

}  // namespace fw::studies

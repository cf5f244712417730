// flexwatt authority: which workload knob of a job moves its power (actuator authority),
// by sweeping each knob over its range on the simulator. Core: elasticity/authority.hpp.

#include "elasticity/authority.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/json_fields.hpp"
#include "cli/verb.hpp"
#include "core/version.hpp"
#include "sim/scenario.hpp"

namespace fw::cli {
namespace {

using ojson = nlohmann::ordered_json;
using elasticity::AuthorityOptions;
using elasticity::AuthorityReport;

ojson num_or_null(double v) { return fw::cli::num_or_null<ojson>(v); }

std::string pct(double f) {
  if (!std::isfinite(f)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", 100 * f);
  return b;
}

ojson report_json(const AuthorityReport& r, const sim::Scenario& s) {
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

void print_table(const AuthorityReport& r, const sim::Scenario& s) {
  const AuthorityOptions& o = r.options;
  std::printf(
      "flexwatt authority (%s): %s, job '%s' (%d GPU%s), %.0f s per run (warm-up %.0f s), "
      "%d seed%s from %llu\n",
      r.simulated ? "simulated" : "measured", s.name.c_str(), r.job.c_str(), r.job_gpus,
      r.job_gpus == 1 ? "" : "s", o.duration_s, o.warmup_s, o.seeds, o.seeds == 1 ? "" : "s",
      static_cast<unsigned long long>(o.seed));
  std::printf(
      "power = sum over the job's GPUs; peak_win = largest %.0f s window mean, "
      "peak_smp = largest %.1f s sample\n",
      o.window_s, o.sample_period_s);
  for (const auto& k : r.knobs) {
    std::printf("\n%s\n", std::string(kKnobNames[static_cast<int>(k.knob)]).c_str());
    std::printf("  %8s %10s %12s %12s %12s\n", "setting", "mean_w", "peak_win_w", "peak_smp_w",
                "tokens/s");
    for (const auto& p : k.points) {
      std::printf("  %8g %10.1f %12.1f %12.1f %12.2f\n", p.value, p.mean_power_w, p.peak_window_w,
                  p.peak_sample_w, p.tokens_per_s);
    }
  }
  std::printf("\n%4s %-16s %11s %14s %14s %11s %s\n", "rank", "knob", "mean_swing",
              "peak_win_swing", "peak_smp_swing", "tput_ratio", "authority");
  for (const auto& k : r.knobs) {
    std::printf("%4d %-16s %11s %14s %14s %10.2fx %s\n", k.rank,
                std::string(kKnobNames[static_cast<int>(k.knob)]).c_str(),
                pct(k.mean_swing).c_str(), pct(k.peak_window_swing).c_str(),
                pct(k.peak_sample_swing).c_str(), k.throughput_ratio,
                k.has_authority ? "yes" : "no");
  }
  std::printf(
      "\nswing = (max - min over settings) / figure at the knob's maximum; authority = mean "
      "swing >= %.0f %%; tput_ratio = highest / lowest tokens/s. All figures simulated.\n",
      100 * o.threshold);
}

int run(int argc, char** argv) {
  CLI::App app(
      "Actuator authority: sweep each workload knob of a job over its range on the\n"
      "simulator (everything else fixed; the knob set at t = 0 and held) and report mean\n"
      "and peak power, throughput, each knob's power swing, and which knobs have authority\n"
      "(mean-power swing >= --threshold). Output is simulated. See docs/operators.md.\n\n"
      "Example:\n"
      "  flexwatt authority scenarios/grpo-72b-a100x4.yaml --duration-s 1800 --json\n"
      "  flexwatt authority scenarios/grpo-7b-a100.yaml --knob gen_concurrency --points 3",
      "authority");
  std::string scenario_path, job = "0";
  std::vector<std::string> knobs, sets;
  double duration_s = -1, warmup_s = 0, window_s = 30, threshold = 0.10;
  int points = 5, seeds = 1;
  uint64_t seed = 1;
  bool json = false;
  app.add_option("SCENARIO", scenario_path, "scenario YAML file")->required();
  app.add_option("--knob", knobs, "knob to sweep (repeatable; default: every knob of the job)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--job", job, "job index or name")->capture_default_str();
  app.add_option("--duration-s", duration_s, "simulated seconds per run (default: the scenario's)");
  app.add_option("--warmup-s", warmup_s, "simulated seconds dropped before measuring")
      ->capture_default_str();
  app.add_option("--window-s", window_s, "window for the peak window mean")->capture_default_str();
  app.add_option("--points", points, "settings per knob (min, max and evenly spaced between)")
      ->capture_default_str();
  app.add_option("--seeds", seeds, "seeds per setting (figures are their means)")
      ->capture_default_str();
  app.add_option("--seed", seed, "first seed")->capture_default_str();
  app.add_option("--threshold", threshold, "mean-power swing (0..1) that counts as authority")
      ->capture_default_str();
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--json", json, "machine-readable output");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto sc = sim::load_scenario(scenario_path, sets);
  if (!sc.ok()) return fail("authority", sc.status());
  const sim::Scenario& s = *sc;
  AuthorityOptions o;
  o.duration_s = duration_s == -1 ? s.duration_s : duration_s;
  if (!(o.duration_s > 0) || !std::isfinite(o.duration_s) || o.duration_s > 1e8) {
    return fail("authority", Status::InvalidArgument("--duration-s: must be > 0 and <= 1e8"));
  }
  // A window holds at least one sample (shorter ones would make the judge step per window).
  if (!std::isfinite(window_s) || window_s < s.sample_period_s) {
    return fail("authority",
                Status::InvalidArgument("--window-s: must be at least the sample period"));
  }
  if (!std::isfinite(warmup_s) || warmup_s < 0 || !std::isfinite(threshold)) {
    return fail("authority",
                Status::InvalidArgument("--warmup-s, --threshold: finite, warmup >= 0"));
  }
  o.sample_period_s = s.sample_period_s;
  o.warmup_s = warmup_s;
  o.window_s = window_s;
  o.points = points;
  o.seeds = seeds;
  o.seed = seed;
  o.threshold = threshold;
  // Job by index or name.
  o.job = -1;
  for (size_t i = 0; i < s.jobs.size(); ++i) {
    if (s.jobs[i].name == job || std::to_string(i) == job) o.job = static_cast<int>(i);
  }
  if (o.job < 0) {
    return fail("authority",
                Status::InvalidArgument("--job: no job '" + job + "' in " + scenario_path));
  }
  for (const std::string& k : knobs) {
    int found = -1;
    for (int i = 0; i < kNumKnobs; ++i) {
      if (kKnobNames[i] == k) found = i;
    }
    if (found < 0) {
      return fail("authority", Status::InvalidArgument("--knob: unknown knob '" + k +
                                                       "' (known: gen_concurrency, group_size)"));
    }
    o.knobs.push_back(static_cast<Knob>(found));
  }
  if (stderr_is_tty()) std::fprintf(stderr, "sweeping (simulated)...\n");
  auto r = elasticity::sweep_authority(s, o);
  if (!r.ok()) return fail("authority", r.status());
  if (json) {
    std::printf("%s\n", report_json(*r, s).dump(2).c_str());
  } else {
    print_table(*r, s);
  }
  return 0;
}

}  // namespace

FW_VERB("authority",
        "which workload knob moves a job's power: sweep each over its range "
        "(simulated)",
        run);

}  // namespace fw::cli

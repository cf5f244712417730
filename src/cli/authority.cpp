// flexwatt authority: which workload knob of a job moves its power (actuator authority),
// by sweeping each knob over its range on the simulator. Core: studies/authority.hpp.

#include <cstdio>
#include <string>
#include <vector>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "sim/scenario.hpp"
#include "studies/authority_report.hpp"

namespace fw::cli {
namespace {

using studies::AuthorityOptions;

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
  double duration_s = 0, warmup_s = 0, window_s = 30, threshold = 0.10;
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
  app.add_option("--seed", seed, "first seed")->capture_default_str()->check(seed_value());
  app.add_option("--threshold", threshold, "mean-power swing (0..1) that counts as authority")
      ->capture_default_str();
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--json", json, "machine-readable output");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto sc = sim::load_scenario(scenario_path, sets);
  if (!sc.ok()) return fail("authority", sc.status());
  const sim::Scenario& s = *sc;
  studies::AuthorityOptions o;
  o.duration_s = app.count("--duration-s") > 0 ? duration_s : s.duration_s;
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
  auto job_index = studies::find_job(s, job);
  if (!job_index.ok()) return fail("authority", job_index.status().with_context("--job"));
  o.job = *job_index;
  for (const std::string& k : knobs) {
    auto knob = studies::knob_by_name(k);
    if (!knob.ok()) return fail("authority", knob.status().with_context("--knob"));
    o.knobs.push_back(*knob);
  }
  if (stderr_is_tty()) std::fprintf(stderr, "sweeping (simulated)...\n");
  auto r = studies::sweep_authority(s, o);
  if (!r.ok()) return fail("authority", r.status());
  if (json) {
    std::printf("%s\n", studies::authority_json(*r, s).dump(2).c_str());
  } else {
    std::printf("%s", studies::format_authority_table(*r, s).c_str());
  }
  return 0;
}

}  // namespace

FW_VERB("authority",
        "which workload knob moves a job's power: sweep each over its range "
        "(simulated)",
        run);

}  // namespace fw::cli

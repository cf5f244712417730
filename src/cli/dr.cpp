// flexwatt dr: demand-response rehearsals: `replay` runs an event (studies/dr_event.hpp) on the
// replay plant under a closed site loop and scores it (studies/dr_replay.hpp).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "report/html_page.hpp"
#include "studies/dr_replay.hpp"

namespace fw::cli {
namespace {

int run_dr(int argc, char** argv) {
  CLI::App app(
      "Demand response: rehearse a grid event before agreeing to it.\n\n"
      "  replay EVENT.yaml   run the event's jobs (their measured cap curves, simulated) under\n"
      "                      the closed site loop and score it: minutes above target, mean\n"
      "                      over-cut, ramp-down time, each job's performance against its tier,\n"
      "                      the tier-weighted performance; with --measured-total, the RMSE of\n"
      "                      the replay's 1-minute means against a measured site total.\n\n"
      "Examples:\n"
      "  flexwatt dr replay scenarios/dr/aps-2025-05-01.yaml --json\n"
      "  flexwatt dr replay scenarios/dr/aps-2025-05-01.yaml --svg aps.svg --html aps.html \\\n"
      "      --measured-total data/emerald-phoenix/aps_job_power_w.csv\n"
      "  flexwatt dr replay scenarios/dr/aps-2025-05-01.yaml --method uncapped  # uncontrolled",
      "dr");
  app.require_subcommand(1);
  std::string event, method = "optimal", svg, measured, projection, html, actions, noise;
  bool json = false, quiet = false;
  double tolerance = -1, z = std::nan(""), ki = std::nan(""), plant_error = -1, depth = -1;
  uint64_t seed = 0;
  bool seed_set = false;
  int gpus_per_node = 0;
  auto* replay = app.add_subcommand(
      "replay",
      "replay an event on the simulated jobs under the site loop (the coordinator's planning\n"
      "step, fleet::SiteRound) and score it\n\n"
      "Exit status: 0; 1 when the event's target cannot be held (deeper than the jobs' tier\n"
      "floors allow, pausable jobs paused within their budgets: the text says so with the\n"
      "shortfall in W; --json has holdable_target_w, shortfall_w, feasible); 2 on bad input.\n\n"
      "Example:\n  flexwatt dr replay scenarios/dr/caiso-reenactment.yaml --json");
  replay->add_option("event", event, "event YAML (docs/flexibility.md, \"dr replay\")")->required();
  replay->add_option("--method", method,
                     "split of the site target: equal, proportional, pfi, pfi_scaled, greedy, "
                     "optimal (default), or uncapped (no control)");
  replay->add_flag("--json", json, "print JSON");
  add_quiet_flag(*replay, quiet);
  replay->add_option("--svg", svg, "write the site power against the target as SVG")
      ->check(output_file());
  replay
      ->add_option("--html", html,
                   "also write a self-contained HTML report: site power against the target, "
                   "each job's performance against its tier, the CLI's tables")
      ->check(output_file());
  replay->add_option("--measured-total", measured,
                     "a measured site total (CSV: timestamp, total) to compare the replay with");
  replay->add_option("--field-projection", projection,
                     "a field simulator's projection (CSV: timestamp, W; a step function)");
  replay->add_option(
      "--field-actions", actions,
      "the field's per-job power (CSV: timestamp, one column per job named by the job's name "
      "first, e.g. data/emerald-phoenix/aps_job_power_w.csv) replayed as actions beside the loop: "
      "the plant-model check (with --measured-total: its RMSE against the total)");
  replay
      ->add_option("--tolerance", tolerance,
                   "scoring tolerance, share of baseline (default: the event's, else 0.01)")
      ->check(finite_in(0, 0.5));
  replay
      ->add_option("--z", z,
                   "margin = z x the site's measured 1-minute noise (default 2, the "
                   "coordinator's)")
      ->check(finite_in(0, 10));
  replay
      ->add_option("--ki", ki,
                   "the site loop's integral gain, W per W·s of the site's error (default 0.1, "
                   "the coordinator's; 0 with --z 0: the curves' caps open loop)")
      ->check(finite_in(0, 1));
  replay
      ->add_option("--plant-error", plant_error,
                   "the plant's jobs draw their curve's power x (1 + u), u uniform in +-this "
                   "(default: the event's, else 0)")
      ->check(finite_in(0, 0.5));
  replay
      ->add_option("--dr-depth", depth,
                   "the event at this depth instead: its deepest step this fraction of the "
                   "baseline below it, the other steps scaled alike (1: a 0 W target)")
      ->check(finite_in(0, 1, true));
  replay
      ->add_option("--noise", noise,
                   "the plant's noise and dips: field (the jobs' own, field-calibrated defaults) "
                   "or quiet (every job 0.5 % on 1-minute means, no dips: the plant before "
                   "issue 45) (default: the event's `noise`, else field)")
      ->check(CLI::IsMember({"field", "quiet"}));
  replay
      ->add_option("--gpus-per-node", gpus_per_node,
                   "GPUs per simulated node (default: the event's gpus_per_node, else 8)")
      ->check(CLI::Range(1, 64));
  replay->add_option("--seed", seed, "seed (default: the event's, else 1)")
      ->check(seed_value())
      ->each([&](const std::string&) { seed_set = true; });
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  auto ev = studies::load_dr_event(event);
  if (!ev.ok()) return fail("dr", ev.status());
  if (tolerance >= 0) ev->tolerance_frac = tolerance;
  if (seed_set) ev->seed = seed;
  if (gpus_per_node > 0) ev->gpus_per_node = gpus_per_node;
  if (plant_error >= 0) ev->plant_error_frac = plant_error;
  if (!noise.empty()) studies::set_dr_noise(*ev, *studies::parse_dr_noise(noise));
  if (depth > 0) {
    double deepest = 0;
    for (const auto& st : ev->steps) deepest = std::max(deepest, st.depth);
    for (auto& st : ev->steps) st.depth = deepest > 0 ? st.depth * depth / deepest : depth;
  }
  studies::DrReplayOptions opt;
  opt.method = method;
  opt.loop.z = z;
  opt.loop.ki_per_s = ki;
  if (!measured.empty()) {
    auto s = studies::read_dr_series(measured);
    if (!s.ok()) return fail("dr", s.status());
    opt.measured_total = *s;
  }
  if (!projection.empty()) {
    auto s = studies::read_dr_series(projection);
    if (!s.ok()) return fail("dr", s.status());
    opt.field_projection = *s;
  }
  Progress progress("dr replay", progress_wanted(quiet));
  opt.progress = [&](size_t done, size_t total) { progress.count("samples", done, total); };
  auto r = studies::run_dr_replay(*ev, opt);
  progress.finish();
  if (!r.ok()) return fail("dr", r.status());
  // The plant-model check: the field's per-job levels as the actions (not a policy).
  std::optional<studies::DrReplayResult> check;
  if (!actions.empty()) {
    studies::DrReplayOptions a = opt;
    a.progress = nullptr;
    for (const auto& job : ev->jobs) {
      auto s = studies::read_dr_series(actions, job.name);
      if (!s.ok()) return fail("dr", s.status());
      a.field_actions.push_back(*s);
    }
    auto c = studies::run_dr_replay(*ev, a);
    if (!c.ok()) return fail("dr", c.status());
    check = std::move(*c);
  }
  if (!svg.empty()) {
    Status st = write_text_file(svg, studies::dr_replay_svg(*r));
    if (!st.ok()) return fail("dr", st);
  }
  if (!html.empty()) {
    nlohmann::json page = studies::dr_replay_json(*r);
    page["kind"] = "dr";
    page["series"] = {{"minute_s", r->minute_s},
                      {"minute_power_w", r->minute_power_w},
                      {"minute_target_w", r->minute_target_w}};
    Status st = write_text_file(html, report::report_html(page));
    if (!st.ok()) return fail("dr", st);
  }
  if (json) {
    nlohmann::json j = studies::dr_replay_json(*r);
    if (check) {
      nlohmann::json c = {{"label", "the field's per-job power levels replayed as actions"},
                          {"actions", actions},
                          {"minutes_above_target", check->minutes_above_target},
                          {"mean_overcut_frac", check->mean_overcut_frac}};
      if (check->vs_measured) {
        c["projected_vs_measured_rmse_frac"] = check->vs_measured->rmse_frac;
        c["event_rmse_frac"] = check->vs_measured->event_rmse_frac;
      }
      j["plant_model_check"] = c;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return r->feasible ? 0 : 1;
  }
  std::printf("%s", studies::dr_replay_table(*r).c_str());
  if (check && check->vs_measured) {
    std::printf(
        "plant-model check (the field's per-job levels as actions, %s): projection vs measured "
        "RMSE %.2f %% of the mean (event only %.2f %%)\n",
        actions.c_str(), 100 * check->vs_measured->rmse_frac,
        100 * check->vs_measured->event_rmse_frac);
  }
  return r->feasible ? 0 : 1;  // the table says why (dr_replay_table)
}

}  // namespace

FW_VERB("dr", "demand response: replay a grid event on the jobs' cap curves and score it", run_dr);

}  // namespace fw::cli

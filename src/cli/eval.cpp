// flexwatt eval: every controller on the same seeds of a simulated scenario, one table of
// tokens, energy, tokens per MWh and violation rates (mean and 95 % CI across seeds).
// The engine is eval/evaluation.hpp, shared with `flexwatt demo`.

#include <cmath>
#include <cstdio>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "eval/eval_table.hpp"
#include "eval/evaluation.hpp"
#include "report/html_page.hpp"

namespace fw::cli {
namespace {

using eval::EvalRequest;
using registry::controller_list_json;
using registry::controller_list_text;

// The scenario (with its overrides and the episode length, when given) and the controllers.
Result<eval::EvalRequest> make_request(const std::string& scenario_path,
                                       const std::vector<std::string>& sets,
                                       const double* duration_s, const std::string& controllers) {
  eval::EvalRequest req;
  FW_ASSIGN_OR_RETURN(req.scenario, sim::load_scenario(scenario_path, sets));
  if (duration_s != nullptr) {
    if (!std::isfinite(*duration_s) || *duration_s < req.scenario.sample_period_s ||
        *duration_s > 1e8) {
      return Status::InvalidArgument(
          "--duration-s must be at least the sample period and at most 1e8");
    }
    req.scenario.duration_s = *duration_s;
  }
  FW_ASSIGN_OR_RETURN(req.specs, parse_controller_list(controllers));
  return req;
}

int run_eval(int argc, char** argv) {
  CLI::App app(
      "Run controllers on the same seeds of a simulated scenario and compare them: tokens, "
      "energy, tokens per MWh, budget violation rates at 0.5 s, 30 s and 300 s windows (mean and "
      "95 % CI across seeds, t-distribution), and ratios to a stated reference row and to the "
      "look-ahead reference.\n\nExample (the shipped PPO policy, knobs + cap, under an "
      "unannounced 15 % budget drop with the budget shield, against the fixed setting with the "
      "same shield: more step tokens and tokens/MWh at no violation; docs/results.md):\n  "
      "flexwatt eval scenarios/grpo-7b-a100-grid-event.yaml --shield --seeds 5 --reference "
      "static:schedule=nominal --controllers static:schedule=nominal,ppo:policies/"
      "grpo-7b-a100.json\n"
      "  flexwatt eval scenarios/grpo-7b-a100.yaml --controllers "
      "uncontrolled,static,threshold,pid,zeus,lookahead --seeds 5 --reference auto\n"
      "  flexwatt eval scenarios/grpo-7b-a100.yaml --controllers static,pid --html "
      "report.html\n  flexwatt eval --list",
      "eval");
  std::string scenario_path, controllers_arg, out_dir, reference, json_out, energy_vs, html_path;
  int seeds = 5;
  int64_t seed_base = 1;
  double duration_s = 0;
  std::vector<std::string> sets;
  bool json = false, list = false, shield = false, shield_on_caps = false, quiet = false,
       wide = false;
  int threads = 2;
  app.add_option("scenario", scenario_path, "scenario file (YAML)");
  app.add_option("--controllers", controllers_arg,
                 "comma-separated controllers with options, e.g. uncontrolled,pid:kp=0.5,ki=0.1");
  app.add_option("--seeds", seeds,
                 "number of seeds (evaluation seeds are seed-base … seed-base+N-1)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--seed-base", seed_base, "first evaluation seed")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--duration-s", duration_s, "episode length, s (default: the scenario's)");
  app.add_option("--set", sets, "override a scenario parameter, key.path=value (repeatable)");
  app.add_option("--reference", reference,
                 "row the others are compared with (tok/ref): a controller as written in "
                 "--controllers or its name, or auto: each row against the joint static over "
                 "the actuators its controller claims (added as a row when not listed), or a "
                 "listed fixed setting of those actuators that made more step tokens on the "
                 "evaluation seeds at no more violations (the stronger reference); "
                 "default: the first static (never an unsafe one)");
  app.add_option("--energy-vs", energy_vs,
                 "add energy saved, throughput lost and EDP change (%) of every row against this "
                 "row on the same seed (completed-step tokens; uncontrolled is run unlisted when "
                 "absent); default: uncontrolled on caps-* scenarios, else none");
  app.add_option("--out", out_dir, "keep every trace: DIR/<controller>/seed-<seed>/");
  app.add_option("--html", html_path,
                 "also write the report as one self-contained HTML page (the dashboard, static)");
  app.add_option("--threads", threads, "episodes run in parallel (results do not depend on it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--shield", shield,
               "turn on the SafetyLimiter's budget shield for every controller");
  app.add_flag("--shield-on-caps", shield_on_caps,
               "the shield (turned on by this flag) cuts the GPUs' caps, not the jobs' knobs");
  app.add_flag("--json", json, "print the results as JSON on stdout");
  app.add_option("--json-out", json_out,
                 "also write the results as JSON to this file (the table still goes to stdout)");
  app.add_flag("--list", list, "list the controllers and their options");
  add_quiet_flag(app, quiet);
  add_wide_flag(app, wide);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  if (list) {
    if (json) {
      std::printf("%s\n", registry::controller_list_json().dump(2).c_str());
    } else {
      std::printf("controllers (NAME[:KEY=VALUE,...]):\n%s",
                  registry::controller_list_text().c_str());
    }
    return 0;
  }
  if (scenario_path.empty())
    return fail("eval", Status::InvalidArgument("a SCENARIO file is required"));
  if (controllers_arg.empty()) {
    return fail("eval",
                Status::InvalidArgument("--controllers is required (see flexwatt eval --list)"));
  }
  for (const std::string* path : {&json_out, &html_path}) {  // checked before the run
    if (path->empty()) continue;
    if (Status st = check_writable_parent(*path); !st.ok()) return fail("eval", st);
  }
  auto req = make_request(scenario_path, sets, app.count("--duration-s") ? &duration_s : nullptr,
                          controllers_arg);
  if (!req.ok()) return fail("eval", req.status());
  for (int i = 0; i < seeds; ++i) req->seeds.push_back(static_cast<uint64_t>(seed_base) + i);
  req->out_dir = out_dir;
  req->threads = threads;
  req->shield = shield;
  req->shield_on_caps = shield_on_caps;
  req->reference = reference;
  const bool caps_scenario = req->scenario.name.rfind("caps-", 0) == 0;
  req->energy_vs = app.count("--energy-vs") ? (energy_vs == "none" ? "" : energy_vs)
                   : caps_scenario          ? "uncontrolled"
                                            : "";
  Progress progress("eval", progress_wanted(quiet));
  auto report = eval::run_evaluation(
      *req, [&](size_t done, size_t total) { progress.count("episodes", done, total); },
      [&](size_t i, size_t n, const std::string& label) {
        progress.show("preparing " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + label);
      });
  progress.finish();
  if (!report.ok()) return fail("eval", report.status());
  if (!json_out.empty()) {
    if (Status st = write_text_file(json_out, report->to_json(*req).dump(2) + "\n"); !st.ok())
      return fail("eval", st);
  }
  if (!html_path.empty()) {
    if (Status st = write_text_file(html_path, report::report_html(report->to_json(*req)));
        !st.ok())
      return fail("eval", st);
  }
  if (json) {
    std::printf("%s\n", report->to_json(*req).dump(2).c_str());
  } else {
    std::printf("%s", eval::format_eval_table(*req, *report, TextStyle{wide}).c_str());
  }
  return 0;
}

FW_VERB("eval", "compare controllers on the same seeds of a simulated scenario", run_eval);

}  // namespace
}  // namespace fw::cli

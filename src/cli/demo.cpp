// flexwatt demo: the main job of the README. Evaluates the 7B GRPO scenario with the
// baselines, the shipped PPO policy and the look-ahead reference, prints our simulated figures
// beside the published ones, and writes a report directory (JSON, CSV, SVG plot).
// The logic is eval/demo.hpp.

#include "eval/demo.hpp"

#include <cstdio>
#include <fstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "core/text_table.hpp"
#include "eval/eval_table.hpp"
#include "report/html_page.hpp"

namespace fw::cli {
namespace {

int run_demo(int argc, char** argv) {
  CLI::App app(
      "The main job: evaluate scenarios/grpo-7b-a100.yaml (GRPO post-training of a 7B model on "
      "one simulated A100 under a 314.6 W budget) with uncontrolled, static, threshold, pid, the "
      "shipped PPO policy and the look-ahead reference (not a bound); print our SIMULATED "
      "figures beside the published ones and write a report directory (report.json, "
      "report.html, summary.csv, power.svg, traces of the first seed).\n\nExample:\n  "
      "flexwatt demo --out flexwatt-demo\n  "
      "flexwatt demo --seeds 3 --duration-s 3600 --json",
      "demo");
  eval::DemoRequest req;
  double duration_s = 0;
  bool json = false, quiet = false, wide = false, verbose = false;
  app.add_option("--scenario", req.scenario_path, "scenario file")->capture_default_str();
  app.add_option("--policy", req.policy_path, "PPO policy file")->capture_default_str();
  app.add_option("--knobs-policy", req.knobs_policy_path,
                 "a second PPO policy shown beside it, by default the one on the knobs only "
                 "(the published actuator set); 'none' to leave it out")
      ->capture_default_str();
  app.add_option("--out", req.out_dir, "report directory")->capture_default_str();
  app.add_option("--seeds", req.seeds, "evaluation seeds 1..N")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--duration-s", duration_s, "episode length, s (default: the scenario's)")
      ->check(finite_in(60, 1e8));
  app.add_option("--threads", req.threads, "episodes in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--json", json, "print report.json on stdout instead of the tables");
  add_quiet_flag(app, quiet);
  add_wide_flag(app, wide);
  app.add_flag("--verbose", verbose, "also print each controller's decision cost (us per call)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (app.count("--duration-s")) req.duration_s = duration_s;

  Progress progress("demo", progress_wanted(quiet));
  auto r = eval::run_demo(
      req, [&](size_t done, size_t total) { progress.count("simulated episodes", done, total); },
      [&](size_t i, size_t n, const std::string& label) {
        progress.show("preparing " + std::to_string(i + 1) + "/" + std::to_string(n) + " " + label);
      });
  progress.finish();
  if (!r.ok()) return fail("demo", r.status());
  // The report as a self-contained page (the agent's dashboard, static); the path on stderr so
  // stdout (the tables, or report.json with --json) is unchanged.
  const std::string html_path = req.out_dir + "/report.html";
  if (Status st = write_text_file(html_path, report::report_html(r->json)); !st.ok())
    return fail("demo", st);
  if (json) {
    std::fprintf(stderr, "demo: wrote %s\n", html_path.c_str());  // stdout: report.json alone
    std::printf("%s\n", r->json.dump(2).c_str());
    return 0;
  }
  // The headline first; the table with identical rows merged (the JSON keeps every row);
  // decision timings under --verbose.
  std::printf("%s", eval::format_demo_headline(req, *r, TextStyle{wide}).c_str());
  eval::EvalReport shown = r->report;
  const std::vector<std::string> merged = eval::merge_identical_rows(shown);
  std::string table = eval::format_eval_table(r->eval, shown, TextStyle{wide}, verbose);
  for (const std::string& m : merged) table += wrap_text("note: " + m + "\n", 120, "  ");
  std::printf("%s\n", table.c_str());
  std::printf("%s", eval::format_demo_comparison(req, *r, TextStyle{wide}).c_str());
  return 0;
}

FW_VERB("demo", "the main job: PPO vs baselines on the simulated 7B GRPO scenario, with a report",
        run_demo);

}  // namespace
}  // namespace fw::cli

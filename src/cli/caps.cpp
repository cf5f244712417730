// flexwatt caps: the per-GPU cap comparison (studies/cap_compare.hpp, docs/caps.md).

#include <cstdio>
#include <fstream>

#include "cli/flag_checks.hpp"
#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "report/html_page.hpp"
#include "report/svg_plot.hpp"
#include "studies/cap_compare.hpp"

namespace fw::cli {
namespace {

int run_caps(int argc, char** argv) {
  CLI::App app(
      "Compare power-cap arms on one simulated scenario, every arm on the same seeds against "
      "the uncapped run of each seed: energy saved per token, throughput lost, EDP change, the "
      "uniform and per-GPU static frontiers, Zeus, PID on caps and capnet policies; on a "
      "pipeline job also frontier (offline profile), envpipe-like and capnet:online (an online "
      "search, no profile).\n\nExample:\n"
      "  flexwatt caps scenarios/caps-pipeline-imbalance-a100x8.yaml --seeds 5 "
      "--policies policies/capnet-a100-alpha0.3.json --svg pareto.svg --html caps.html",
      "caps");
  studies::CapCompareRequest r;
  std::string path, svg, policies, html;
  std::vector<std::string> sets;
  bool json = false, quiet = false;
  app.add_option("scenario", path, "scenario YAML")->required();
  app.add_option("--seeds", r.seeds, "evaluation seeds seed-base..seed-base+N-1")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--seed-base", r.seed_base, "first evaluation seed")
      ->capture_default_str()
      ->check(seed_value());
  app.add_option("--policies", policies, "capnet policy files, comma-separated");
  app.add_option("--set", sets, "override a scenario parameter (repeatable)");
  app.add_option("--threads", r.threads, "episodes in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--svg", svg, "write the Pareto plot (SVG)")->check(output_file());
  app.add_option("--html", html,
                 "also write a self-contained HTML report: the trade-off plot and the arms table")
      ->check(output_file());
  app.add_flag("--quick", r.quick, "fewer sweep points");
  app.add_flag("--json", json, "print JSON on stdout");
  add_quiet_flag(app, quiet);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  for (size_t a = 0; a < policies.size();) {
    size_t b = policies.find(',', a);
    if (b == std::string::npos) b = policies.size();
    if (b > a) r.policies.push_back(policies.substr(a, b - a));
    a = b + 1;
  }
  auto sc = sim::load_scenario(path, sets);
  if (!sc.ok()) return fail("caps", sc.status());
  r.scenario = std::move(sc).value();
  Progress progress("caps", progress_wanted(quiet));
  r.progress = [&](size_t done, size_t total) { progress.count("episodes", done, total); };
  auto res = studies::run_cap_compare(r);
  progress.finish();
  if (!res.ok()) return fail("caps", res.status());
  if (!svg.empty()) {
    if (auto s = write_text_file(svg, res->svg()); !s.ok()) return fail("caps", s);
  }
  if (!html.empty()) {
    nlohmann::json page = res->to_json();
    page["kind"] = "caps";
    if (auto s = write_text_file(html, report::report_html(page)); !s.ok()) return fail("caps", s);
  }
  if (json) {
    std::printf("%s\n", res->to_json().dump(2).c_str());
  } else {
    std::printf("%s", res->table().c_str());
  }
  return 0;
}

FW_VERB("caps", "compare power-cap arms (uniform/per-GPU static, Zeus, PID, capnet)", run_caps);

}  // namespace
}  // namespace fw::cli

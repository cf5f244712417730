// flexwatt allocate: split a site power target across jobs by every allocation method
// (studies/allocate.hpp has the input format; allocation/allocation.hpp the methods).

#include "studies/allocate.hpp"

#include <cstdio>

#include "cli/flag_checks.hpp"
#include "cli/verb.hpp"
#include "core/text_file.hpp"
#include "report/svg_plot.hpp"
#include "studies/allocate_dr.hpp"
#include "studies/population.hpp"

namespace fw::cli {
namespace {

int run_study(const studies::PopulationOptions& opt, const std::string& svg, bool json,
              const TextStyle& style) {
  auto rep = studies::run_population(opt);
  if (!rep.ok()) return fail("allocate", rep.status());
  if (!svg.empty()) {
    Status st = write_text_file(svg, studies::population_svg(*rep));
    if (!st.ok()) return fail("allocate", st);
  }
  if (json) {
    std::printf("%s\n", studies::population_json(*rep).dump(2).c_str());
  } else {
    std::printf("%s", studies::population_table(*rep, style).c_str());
  }
  return 0;
}

int run_dr(studies::DrOptions opt, const std::string& svg, bool json) {
  using allocation::Method;
  auto rep = studies::run_demand_response(
      opt, {Method::kEqual, Method::kPfi, Method::kPfiScaled, Method::kGreedy, Method::kOptimal});
  if (!rep.ok()) return fail("allocate", rep.status());
  if (!svg.empty()) {
    Status st = write_text_file(svg, studies::dr_svg(*rep));
    if (!st.ok()) return fail("allocate", st);
  }
  std::printf("%s", json ? (studies::dr_json(*rep).dump(2) + "\n").c_str()
                         : studies::dr_table(*rep).c_str());
  return 0;
}

int run_allocate_verb(int argc, char** argv) {
  CLI::App app(
      "Split a site power target across jobs: equal (same share of Pmax), proportional (to\n"
      "draw), pfi (curtail in proportion to Pmax/Tmax x PFI), greedy (concave hulls, least\n"
      "throughput lost per watt) and optimal (exact reference). SLA tiers (sla_pct: maximum\n"
      "slowdown) are respected or the split is reported infeasible.\n"
      "Input (YAML or JSON): target_w or cut, and jobs with a curve, a PFI or a sweep CSV.\n\n"
      "Examples:\n"
      "  flexwatt allocate scenarios/flex/allocate-demo.yaml --per-job\n"
      "  flexwatt allocate scenarios/flex/allocate-demo.yaml --cut 0.4 --method pfi --json\n"
      "  flexwatt allocate --study --populations 500 --svg gap.svg   # population study\n"
      "  flexwatt allocate --dr scenarios/flex/dr-fleet-h200.yaml --svg dr.svg  # in the loop",
      "allocate");
  std::string in, method;
  double cut = 0, target_w = 0;
  bool json = false, per_job = false;
  TextStyle style;
  studies::PopulationOptions study;
  bool run_study_flag = false;
  std::string svg;
  app.add_option("input", in, "jobs and target (YAML or JSON)");
  app.add_flag("--study", run_study_flag, "population study on simulated jobs instead of input");
  app.add_option("--populations", study.populations, "study: populations (default 500)");
  app.add_option("--jobs", study.jobs, "study: jobs per population (default 100)");
  app.add_option("--pool", study.pool, "study: distinct simulated job shapes (default 2000)");
  app.add_flag("--sla-tiers", study.sla_tiers, "study: draw SLA tiers 0/10/25/50 %");
  app.add_option("--fixed-gpus", study.fixed_gpus, "study: every job this many GPUs (0: drawn)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--rate-sigma", study.rate_sigma, "study: spread of tokens/s per GPU (0.4)")
      ->check(finite_in(0, 5));
  app.add_option("--seed", study.seed, "study: seed (default 1)")->check(seed_value());
  app.add_option("--svg", svg, "study / --dr: write the plot as SVG")->check(output_file());
  studies::DrOptions dr;
  app.add_option("--dr", dr.scenario_path, "demand response in the loop on this scenario");
  app.add_option("--dr-drop", dr.drop, "--dr: target drop, share of the uncapped draw (0.3)")
      ->check(finite_in(0, 1));
  app.add_option("--dr-gain", dr.feedback_gain, "--dr: site feedback gain (default 0: open loop)")
      ->check(finite_in(0, 100));
  app.add_option("--dr-quantile", dr.power_quantile,
                 "--dr: job power = this quantile of 30 s means (0.95; 0: mean)")
      ->check(finite_in(0, 1));
  app.add_option("--method", method, "only this method (plus equal and optimal for the gap)");
  app.add_option("--cut", cut, "override: share of the summed Pmax to remove, 0..1")
      ->check(finite_in(0, 1));
  app.add_option("--target-w", target_w, "override: site power target, W")
      ->check(finite_in(0, 1e12, true));
  app.add_flag("--per-job", per_job, "table: each job's power and slowdown per method");
  app.add_flag("--json", json, "print JSON");
  add_wide_flag(app, style.wide);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (run_study_flag) return run_study(study, svg, json, style);
  if (!dr.scenario_path.empty()) return run_dr(dr, svg, json);
  if (in.empty()) return fail("allocate", Status::InvalidArgument("input: a file, or --study"));
  auto input = studies::load_allocate_input(in);
  if (!input.ok()) return fail("allocate", input.status());
  if (app.count("--cut") > 0) {
    double pmax_sum = 0;
    for (const auto& j : input->jobs) pmax_sum += j.curve.back().power_w;
    input->target_w = pmax_sum * (1 - cut);
  }
  if (app.count("--target-w") > 0) input->target_w = target_w;
  std::vector<allocation::Method> methods = allocation::all_methods();
  if (!method.empty()) {
    auto m = allocation::parse_method(method);
    if (!m.ok())
      return fail("allocate", Status::InvalidArgument("--method: " + m.status().message()));
    methods = {allocation::Method::kEqual, *m};
    if (*m == allocation::Method::kEqual) methods.pop_back();
    if (*m != allocation::Method::kOptimal) methods.push_back(allocation::Method::kOptimal);
  }
  auto report = studies::run_allocate(*input, methods);
  if (json) {
    std::printf("%s\n", studies::allocate_json(report).dump(2).c_str());
  } else {
    std::printf("%s", studies::allocate_table(report, per_job, style).c_str());
  }
  for (const auto& a : report.results) {
    if (!a.feasible) {
      // A result, not a failure: reported (feasible: false), every job at its SLA floor.
      std::fprintf(stderr, "flexwatt allocate: infeasible: the SLA floors exceed the target\n");
      break;
    }
  }
  return 0;
}

}  // namespace

FW_VERB("allocate", "split a site power target across jobs (equal, pfi, greedy, optimal)",
        run_allocate_verb);

}  // namespace fw::cli

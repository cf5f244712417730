// flexwatt allocate: split a site power target across jobs by every allocation method
// (experiment/allocate.hpp has the input format; allocation/allocation.hpp the methods).

#include "experiment/allocate.hpp"

#include <cstdio>

#include "cli/verb.hpp"

namespace fw::cli {
namespace {

int run_allocate_verb(int argc, char** argv) {
  CLI::App app(
      "Split a site power target across jobs: equal (same share of Pmax), proportional (to\n"
      "draw), pfi (curtail in proportion to Pmax/Tmax x PFI), greedy (concave hulls, least\n"
      "throughput lost per watt) and optimal (exact reference). SLA tiers (sla_pct: maximum\n"
      "slowdown) are respected or the split is reported infeasible.\n"
      "Input (YAML or JSON): target_w or cut, and jobs with a curve, a PFI or a sweep CSV.\n\n"
      "Examples:\n"
      "  flexwatt allocate scenarios/flex/allocate-demo.yaml --per-job\n"
      "  flexwatt allocate scenarios/flex/allocate-demo.yaml --cut 0.4 --method pfi --json",
      "allocate");
  std::string in, method;
  double cut = -1, target_w = -1;
  bool json = false, per_job = false;
  app.add_option("input", in, "jobs and target (YAML or JSON)")->required();
  app.add_option("--method", method, "only this method (plus equal and optimal for the gap)");
  app.add_option("--cut", cut, "override: share of the summed Pmax to remove, 0..1");
  app.add_option("--target-w", target_w, "override: site power target, W");
  app.add_flag("--per-job", per_job, "table: each job's power and slowdown per method");
  app.add_flag("--json", json, "print JSON");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  auto input = experiment::load_allocate_input(in);
  if (!input.ok()) return fail("allocate", input.status());
  if (cut >= 0) {
    if (cut > 1) return fail("allocate", Status::InvalidArgument("--cut: must be in [0, 1]"));
    double pmax_sum = 0;
    for (const auto& j : input->jobs) pmax_sum += j.curve.back().power_w;
    input->target_w = pmax_sum * (1 - cut);
  }
  if (target_w >= 0) input->target_w = target_w;
  std::vector<allocation::Method> methods = allocation::all_methods();
  if (!method.empty()) {
    auto m = allocation::parse_method(method);
    if (!m.ok())
      return fail("allocate", Status::InvalidArgument("--method: " + m.status().message()));
    methods = {allocation::Method::kEqual, *m};
    if (*m == allocation::Method::kEqual) methods.pop_back();
    if (*m != allocation::Method::kOptimal) methods.push_back(allocation::Method::kOptimal);
  }
  auto report = experiment::run_allocate(*input, methods);
  if (json) {
    std::printf("%s\n", experiment::allocate_json(report).dump(2).c_str());
  } else {
    std::printf("%s", experiment::allocate_table(report, per_job).c_str());
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

// flexwatt stabilize: which fixed mitigation, combination or controller keeps a simulated site's
// power within ramp and spectral limits, and at what cost (issue #48). Core:
// studies/stability_study.hpp; docs/stabilization.md.

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cli/progress.hpp"
#include "cli/verb.hpp"
#include "core/format.hpp"
#include "studies/stability_controller.hpp"
#include "studies/stability_table.hpp"

namespace fw::cli {
namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string part =
        s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

int run(int argc, char** argv) {
  CLI::App app(
      "Power stabilisation of a simulated training site: runs the arms none, each mitigation\n"
      "alone (power caps, GPU power smoothing, a fill workload, staggered start/stop) at its\n"
      "best fixed setting, the best fixed combination (settings searched on calibration seeds\n"
      "1000000+) and any --controller, on evaluation seeds 1..N, and reports ramps, band\n"
      "energy, energy overhead and throughput loss, and whether each arm meets the scenario's\n"
      "limits. Everything is simulated. See docs/stabilization.md. The feed-forward\n"
      "controller also runs in `flexwatt agent` on Blackwell GPUs (controller\n"
      "stabilize:pre_fill=off; docs/stabilization.md, \"In the agent\").\n\n"
      "Example:\n"
      "  flexwatt stabilize scenarios/stability/site-1024-h100.yaml --eval-seeds 3\n"
      "  flexwatt stabilize scenarios/stability/site-16384-h100.yaml --arms none,smoothing \\\n"
      "      --trace site.csv --trace-arm smoothing && flexwatt analyze --stability site.csv",
      "stabilize");
  std::string scenario_path, arms_text, trace_path, trace_arm = "none";
  std::vector<std::string> sets, controllers;
  int eval_seeds = 3, calib_seeds = 2;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double controller_period_s = 0.5;
  bool json = false, quiet = false;
  app.add_option("SCENARIO", scenario_path, "stability scenario YAML")->required();
  app.add_option("--eval-seeds", eval_seeds, "evaluation seeds 1..N")->capture_default_str();
  app.add_option("--calib-seeds", calib_seeds, "calibration seeds 1000000.. (the search)")
      ->capture_default_str();
  app.add_option("--arms", arms_text,
                 "comma-separated: none,caps,smoothing,fill,stagger,combined,stabilize (the "
                 "feed-forward controller; default: all the site can run)");
  app.add_option("--controller", controllers,
                 "a controller arm, registry spec (repeatable; commands per-group caps)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--controller-period-s", controller_period_s, "the controller loop's tick")
      ->capture_default_str();
  app.add_option("--threads", threads, "simulations run at once")->capture_default_str();
  app.add_option("--set", sets, "override a scenario key, key.path=value (repeatable)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_option("--trace", trace_path,
                 "write the site power (time_s,power_w CSV) of --trace-arm on evaluation seed 1");
  app.add_option("--trace-arm", trace_arm, "arm whose trace --trace writes")->capture_default_str();
  app.add_flag("--json", json, "machine-readable output");
  app.add_flag("--quiet", quiet, "no progress line");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto sc = studies::load_stability_scenario(scenario_path, sets);
  if (!sc.ok()) return fail("stabilize", sc.status());
  studies::StabilityStudyOptions o;
  o.eval_seeds = eval_seeds;
  o.calib_seeds = calib_seeds;
  o.threads = threads;
  if (!arms_text.empty()) {
    o.arms = split_commas(arms_text);
  } else if (sc->site.smoothing == nullptr) {
    o.arms = {"none", "caps", "fill", "stagger", "combined"};
  } else {
    o.arms.push_back("stabilize");
  }
  // The stabilize arm is a controller arm (its settings chosen on the calibration seeds).
  const auto stab = std::find(o.arms.begin(), o.arms.end(), "stabilize");
  if (stab != o.arms.end()) {
    o.arms.erase(stab);
    auto arm = studies::stabilize_arm(*sc, calib_seeds);
    if (!arm.ok()) return fail("stabilize", arm.status());
    o.controllers.push_back(std::move(arm).value());
  }
  if (!(controller_period_s > 0) || controller_period_s > 60) {
    return fail("stabilize", Status::InvalidArgument("--controller-period-s: must be in (0, 60]"));
  }
  for (const std::string& spec : controllers) {
    auto arm = studies::controller_arm_from_spec(*sc, spec, controller_period_s, calib_seeds);
    if (!arm.ok()) return fail("stabilize", arm.status());
    o.controllers.push_back(std::move(arm).value());
  }
  if (Status st = studies::validate(*sc, o); !st.ok()) return fail("stabilize", st);
  bool trace_arm_known = false;
  for (const auto& a : o.arms) trace_arm_known = trace_arm_known || a == trace_arm;
  for (const auto& c : o.controllers) trace_arm_known = trace_arm_known || c.name == trace_arm;
  if (!trace_path.empty() && !trace_arm_known && trace_arm != "none") {
    return fail("stabilize", Status::InvalidArgument("--trace-arm: '" + trace_arm +
                                                     "' is not one of the arms run"));
  }
  Progress progress("stabilize", progress_wanted(quiet));
  o.progress = [&progress](size_t done, size_t total) { progress.count("runs", done, total); };
  auto r = studies::run_stability_study(*sc, o);
  progress.finish();
  if (!r.ok()) return fail("stabilize", r.status());

  std::string trace_note;
  if (!trace_path.empty()) {
    const studies::StabilityArmResult* arm = nullptr;
    for (const auto& a : r->arms) {
      if (a.name == trace_arm) arm = &a;
    }
    studies::StabilityControllerArm chosen;
    const studies::StabilityControllerArm* ctl = nullptr;
    for (const auto& c : o.controllers) {
      if (c.name != trace_arm) continue;
      chosen = c;  // the candidate the study chose on the calibration seeds, when it chose
      for (const auto& k : c.candidates) {
        if (arm != nullptr && arm->setting == k.spec) chosen.make = k.make;
      }
      ctl = &chosen;
    }
    const sim::SiteMitigations m = arm != nullptr ? arm->chosen : sim::SiteMitigations{};
    auto run = studies::run_stability_arm(*sc, m, ctl, r->eval_seeds.front());
    if (!run.ok()) return fail("stabilize", run.status());
    if (Status st = studies::write_site_csv(trace_path, *run); !st.ok()) {
      return fail("stabilize", st);
    }
    trace_note = "trace: " + trace_path + " (arm " + trace_arm + ", seed " +
                 std::to_string(r->eval_seeds.front()) + ", " + std::to_string(run->time_s.size()) +
                 " samples every " + format_g(run->output_period_s) + " s)\n";
  }
  if (json) {
    nlohmann::json j = studies::stability_json(*r);
    j["trace"] = trace_path.empty() ? nlohmann::json(nullptr)
                                    : nlohmann::json({{"path", trace_path}, {"arm", trace_arm}});
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s%s", studies::format_stability_table(*r).c_str(), trace_note.c_str());
  }
  return 0;
}

}  // namespace

FW_VERB("stabilize",
        "site power stabilisation: mitigations and their cost against ramp and band limits "
        "(simulated)",
        run);

}  // namespace fw::cli

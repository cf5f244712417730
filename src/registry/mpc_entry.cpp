#include "registry/mpc_entry.hpp"

#include <algorithm>
#include <cmath>

#include "controllers/mpc_controller.hpp"
#include "registry/grpo_twin.hpp"
#include "registry/seed_log.hpp"

namespace fw::registry {
namespace {

using D = OptionDecl;

// One replan, appended to its seed's entry of the row's notes (plans_by_seed): the counts of
// replans, refits and twin episodes, and the plan.
void log_replan(SeedLog& log, uint64_t seed, const MpcPlanEvent& e) {
  nlohmann::json set = nlohmann::json::object();
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!std::isnan(e.setting.hold[q])) set[std::string(kKnobNames[q])] = e.setting.hold[q];
  }
  set[e.setting.inner.name()] = e.setting.value;
  nlohmann::json medians = nlohmann::json::array();
  if (e.fit.is_object() && e.fit.contains("jobs")) {
    for (const auto& j : e.fit["jobs"]) medians.push_back(j.value("median_tokens", 0.0));
  }
  log.update(seed, [&](nlohmann::json& s) {
    if (s.is_null()) s = {{"replans", 0}, {"refits", 0}, {"twin_episodes", 0}, {"plans", {}}};
    s["replans"] = s["replans"].get<int>() + 1;
    s["refits"] = s["refits"].get<int>() + (e.fitted ? 1 : 0);
    s["twin_episodes"] = s["twin_episodes"].get<int>() + e.episodes;
    s["plans"].push_back({{"t_s", e.time_s},
                          {"applied_s", e.applied_s},
                          {"fitted", e.fitted},
                          {"found", e.found},
                          {"margin", e.margin},
                          {"median_tokens", medians},
                          {"setting", set}});
  });
}

Result<PreparedController> prepare_mpc(const DeclaredOptions& o, const ControllerEnv& env) {
  if (!env.declared) {
    return Status::InvalidArgument(
        "controller 'mpc': needs the run's declared scenario for its twin (flexwatt eval on a "
        "scenario file); not available here");
  }
  if (env.calibration_seeds.empty()) {
    return Status::InvalidArgument("controller 'mpc': no search seeds for the twin");
  }
  FW_ASSIGN_OR_RETURN(std::vector<Actuator> all, resolve_actuators("all", env.info));
  std::vector<Actuator> acts;
  for (const Actuator& a : all) {
    if (a.kind != Actuator::Kind::kCaps) acts.push_back(a);
  }
  acts.push_back(Actuator::of_index(kCapActuator));  // the shield acts on the caps
  MpcConfig c;
  c.period_s = o.number("period_s");
  c.replan_s = o.number("replan_s");
  c.shield = o.text("shield") == "on";
  c.guard_w = o.number("guard_w");
  c.max_margin = o.number("max_margin");
  c.plan_delay_s = o.number("plan_delay_s");
  c.wait_for_plan = o.text("wait") == "block";
  c.search.actuators = acts;
  c.search.grid = o.integer("grid");
  c.search.refine = o.text("refine") == "on";
  c.search.base.seeds = env.calibration_seeds;  // the twin's seeds: never the plant's
  c.search.base.duration_s = o.number("horizon_s");
  c.search.base.sample_period_s = env.sample_period_s;
  c.search.base.limiter = env.limiter;
  c.search.base.max_candidates = o.integer("candidates");
  sim::OnlineFitConfig fc;
  fc.window_s = o.number("fit_window_s");
  fc.min_steps = o.integer("min_steps");
  fc.trend_ahead_s = o.text("trend") == "on" ? 0.5 * c.search.base.duration_s : 0;
  fc.trend_max_factor = o.number("trend_max");
  fc.trend_window_s = o.number("trend_window_s");

  // The first plan: the search on the declared twin (no telemetry yet), against the budget in
  // force at the start. Runs once per eval, on the CPU; no node time.
  BudgetSchedule b0;
  b0.entries.push_back({0, env.budget.at(0)});
  const sim::Scenario declared = twin_scenario(*env.declared, {});
  auto declared_plants = [&declared](uint64_t seed) { return sim::make_plant(declared, seed); };
  FW_ASSIGN_OR_RETURN(JointCalibration j0, calibrate_static_joint(declared_plants, b0, c.search));
  if (!j0.found) {
    return Status::Internal(
        "controller 'mpc': no setting is safe on the declared twin at the start budget");
  }
  const MpcSetting initial = mpc_setting(j0);

  PreparedController p;
  nlohmann::json set = nlohmann::json::object();
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!std::isnan(initial.hold[q])) set[std::string(kKnobNames[q])] = initial.hold[q];
  }
  set[initial.inner.name()] = initial.value;
  p.notes["searched"] = actuator_set_name([&] {
    ActuatorSet s;
    for (const Actuator& a : acts) s.set(static_cast<size_t>(a.index()));
    return s;
  }());
  p.notes["initial_setting"] = set;
  p.notes["twin"] =
      "the declared scenario without its completion-length curves, stragglers and pauses; each "
      "GRPO job's completion "
      "median refitted every replan_s from the completed steps of the trailing fit window";
  p.notes["planning"] = {{"seeds", env.calibration_seeds},
                         {"horizon_s", c.search.base.duration_s},
                         {"replan_s", c.replan_s},
                         {"initial_twin_episodes", j0.episodes},
                         {"node_time_s", 0}};
  auto log = std::make_shared<SeedLog>();
  const std::shared_ptr<const sim::Scenario> decl = env.declared;
  p.make = [c, fc, decl, initial, log](uint64_t seed) -> std::unique_ptr<Controller> {
    return std::make_unique<MpcController>(
        c, std::make_unique<GrpoTwin>(decl, fc), initial,
        [log, seed](const MpcPlanEvent& e) { log_replan(*log, seed, e); });
  };
  p.finish = [log](nlohmann::json& notes) { notes["plans_by_seed"] = log->json(); };
  return p;
}

}  // namespace

ControllerEntry mpc_entry() {
  return {
      "mpc",
      "model-predictive control on a twin fitted online from the run's own telemetry: every "
      "replan_s the twin (the declared scenario, completion lengths refitted from the trailing "
      "window) is searched for the best fixed setting of every knob and the cap over "
      "horizon_s, against the budget less the twin's observed under-prediction; a shield caps "
      "each decision so every trailing window stays under the budget (simulated scenarios)",
      "",
      {D::number("period_s", "0.5", 0.1, 1e6, "decision (shield) period, s"),
       D::number("replan_s", "600", 10, 1e7, "refit and search period, s"),
       D::number("horizon_s", "600", 10, 1e6, "twin episode length of the search, s"),
       D::number("fit_window_s", "900", 10, 1e7,
                 "trailing window of completed steps the twin is refitted from, s"),
       D::integer("min_steps", "3", 1, 1000, "fewest completed steps in the window to refit"),
       D::choice("trend", "off", {"on", "off"},
                 "refit: project the window's completion-length trend to the middle of the "
                 "horizon (horizon_s / 2 ahead), bounded by trend_max"),
       D::number("trend_max", "1.5", 1, 10,
                 "trend: the projected mean stays within the window's mean x / this factor"),
       D::number("trend_window_s", "3600", 10, 1e7,
                 "trend: the slope's window of completed steps, s"),
       D::integer("candidates", "12", 2, 1000, "cap settings tried in the coarse scan"),
       D::integer("grid", "0", 0, 1000,
                  "search: coarse grid points per outer knob; 0 = auto (as static)"),
       D::choice("refine", "on", {"on", "off"}, "search: pattern search from the grid's best"),
       D::choice("shield", "on", {"on", "off"},
                 "cap each decision so every trailing window stays under the budget (with a "
                 "safe continuation at the GPUs' lowest caps)"),
       D::number("guard_w", "5", 0, 1000, "shield: kept free in every trailing window, W per GPU"),
       D::number("plan_delay_s", "10", 0, 1e6,
                 "the search runs off the decision thread; its setting takes effect this long "
                 "after the replan (0: inside the replan decision)"),
       D::choice("wait", "never", {"never", "block"},
                 "never: no decision waits for the search (the last finished plan is used; in a "
                 "simulation faster than real time the episode then depends on thread timing); "
                 "block: the decision at plan_delay_s waits for it (deterministic)"),
       D::number("max_margin", "0.05", 0, 0.5,
                 "largest uncertainty margin kept free at a replan, fraction of the budget")},
      prepare_mpc};
}

}  // namespace fw::registry

// The built-in controllers' registry entries (controllers/*.hpp, rl/ppo_controller.hpp),
// each with its options declared once.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "control/actuator.hpp"
#include "controllers/cap_arms.hpp"
#include "controllers/capnet_online_controller.hpp"
#include "controllers/fleet_controller.hpp"
#include "controllers/frontier_controller.hpp"
#include "controllers/lookahead_plan.hpp"
#include "controllers/oracle_controller.hpp"
#include "controllers/pid_controller.hpp"
#include "controllers/plan_controller.hpp"
#include "controllers/stabilizing_controller.hpp"
#include "controllers/static_calibration.hpp"
#include "controllers/static_controller.hpp"
#include "controllers/static_scheduled_controller.hpp"
#include "controllers/threshold_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "controllers/zeus_controller.hpp"
#include "core/confined_file.hpp"
#include "core/text_file.hpp"
#include "hw/gpu_catalog.hpp"
#include "pipeline/plan_file.hpp"
#include "registry/controller_registry.hpp"
#include "registry/frontier_setup.hpp"
#include "registry/mpc_entry.hpp"
#include "registry/seed_log.hpp"
#include "rl/capnet_controller.hpp"
#include "rl/ppo_controller.hpp"
#include "sim/cluster.hpp"

namespace fw::registry {
namespace {

using D = OptionDecl;

// A row's setup cost (notes["setup_cost"], eval's `setup GPU-h` column): `episodes` episodes of
// `episode_s` simulated seconds on `gpus` GPUs that the arm ran before it could be deployed
// (calibration, training), in GPU-hours of the job it is for.
nlohmann::json setup_cost(const std::string& what, double episodes, double episode_s, double gpus) {
  return {{"what", what},
          {"episodes", episodes},
          {"episode_s", episode_s},
          {"gpus", gpus},
          {"gpu_h", episodes * episode_s * gpus / 3600.0}};
}

Result<Actuator> actuator_option(const DeclaredOptions& o, const ControllerEnv& env) {
  auto a = resolve_actuator(o.text("knob"), env.info);
  if (!a.ok())
    return Status::InvalidArgument("controller '" + o.spec().name + "': knob=" + o.text("knob") +
                                   ": " + a.status().message());
  return a;
}

// The actuator table's flag names, per-GPU rows first: "caps, gen_concurrency, group_size".
std::string actuator_names() {
  std::string s;
  for (ActuatorScope scope : {ActuatorScope::kGpu, ActuatorScope::kJob}) {
    for (const ActuatorDef& d : kActuatorTable) {
      if (d.scope == scope) s += (s.empty() ? "" : ", ") + std::string(d.flag_name);
    }
  }
  return s;
}

D knob_option() {
  std::string order;  // what knob=auto picks: the table's auto_rank order, else caps
  for (int q : kKnobAutoOrder) order += std::string(kActuatorTable[q].flag_name) + ", else ";
  return D::text("knob", "auto", "actuator: auto (" + order + "caps), " + actuator_names());
}

D period_option(const char* def) {
  return D::number("period_s", def, 0.1, 1e6, "decision period, s");
}

ControllerEntry uncontrolled_entry() {
  return {"uncontrolled",
          "knobs at the job's configured values (as it runs without flexwatt), caps at default",
          "",
          {period_option("10")},
          [](const DeclaredOptions& o, const ControllerEnv&) -> Result<PreparedController> {
            const double period = o.number("period_s");
            return PreparedController{
                [period](uint64_t) { return std::make_unique<UncontrolledController>(period); }};
          }};
}

// The actuators static searches jointly: the named one, an "A+B" list, or with knob=auto
// every actuator the plant offers (every knob every job exposes, then caps) except the
// pinned knobs.
Result<std::vector<Actuator>> static_actuators(const DeclaredOptions& o, const ControllerEnv& env,
                                               const KnobValues& hold) {
  const std::string knob = o.text("knob");
  if (knob != "auto" && knob.find('+') == std::string::npos) {
    FW_ASSIGN_OR_RETURN(Actuator a, actuator_option(o, env));
    return std::vector<Actuator>{a};
  }
  std::vector<Actuator> all;
  if (knob == "auto") {
    FW_ASSIGN_OR_RETURN(all, resolve_actuators("all", env.info));
  } else {
    auto r = resolve_actuators(knob, env.info);
    if (!r.ok()) {
      return Status::InvalidArgument("controller 'static': knob=" + knob + ": " +
                                     r.status().message());
    }
    all = *r;
  }
  std::vector<Actuator> out;
  bool caps = false;
  for (const Actuator& a : all) {
    if (a.kind == Actuator::Kind::kCaps) {
      if (!caps) out.push_back(a);
      caps = true;
      continue;
    }
    if (!std::isnan(hold[a.index()])) {
      if (knob == "auto") continue;
      return Status::InvalidArgument("controller 'static': " + a.name() +
                                     "= pins an actuator knob= searches");
    }
    bool dup = false;
    for (const Actuator& b : out) dup = dup || b.index() == a.index();
    if (!dup) out.push_back(a);
  }
  std::sort(out.begin(), out.end(),
            [](const Actuator& x, const Actuator& y) { return x.index() < y.index(); });
  if (!caps && knob == "auto") out.push_back(Actuator::of_index(kCapActuator));
  if (out.empty()) return Status::InvalidArgument("controller 'static': no actuator to calibrate");
  return out;
}

// One calibration of static's actuators on `make_plant`'s plants over `duration_s`, judged
// against `budget`: one actuator by calibrate_static(), several jointly by
// calibrate_static_joint() (per-actuator optima, a coarse joint grid, a pattern search), which
// keeps the safe setting of all of them together with the most completed-step tokens on the
// calibration seeds; when nothing is safe it fails (an unsafe fixed setting is never a
// baseline). `search` (may be null) gets the joint search's notes.
struct StaticSetting {
  Actuator a;
  StaticCalibration cal;
  KnobValues setting = kNoKnobs;  // pins plus the outer knobs' values
};
Result<StaticSetting> calibrate_setting(const DeclaredOptions& o, const ControllerEnv& env,
                                        const PlantFactory& make_plant,
                                        const BudgetSchedule& budget, double duration_s,
                                        const std::vector<Actuator>& acts, const KnobValues& hold,
                                        const std::string& names, nlohmann::json* search) {
  StaticCalibrationConfig cfg;
  cfg.seeds = env.calibration_seeds;
  cfg.duration_s = duration_s;
  cfg.sample_period_s = env.sample_period_s;
  cfg.limiter = env.limiter;
  cfg.max_candidates = o.integer("candidates");
  cfg.hold = hold;
  StaticSetting out;
  out.setting = hold;
  if (acts.size() == 1) {
    out.a = acts.front();
    cfg.actuator = out.a;
    FW_ASSIGN_OR_RETURN(out.cal, calibrate_static(make_plant, budget, cfg));
    if (!out.cal.found) {
      char b[160];
      std::snprintf(b, sizeof b, "%s (lowest setting %g: worst window %.3f x budget)",
                    out.a.name().c_str(), out.cal.value, out.cal.worst_ratio);
      return Status::Internal(
          "controller 'static': no fixed setting is safe on calibration "
          "seeds " +
          nlohmann::json(env.calibration_seeds).dump() + ": " + b +
          "; an unsafe fixed setting is never a baseline");
    }
    return out;
  }
  JointCalibrationConfig jc;
  jc.base = cfg;
  jc.actuators = acts;
  jc.grid = o.integer("grid");
  jc.refine = o.text("refine") == "on";
  FW_ASSIGN_OR_RETURN(JointCalibration j, calibrate_static_joint(make_plant, budget, jc));
  if (!j.found) {
    char b[160];
    std::snprintf(b, sizeof b, " (lowest %s %g: worst window %.3f x budget)",
                  j.inner.name().c_str(), j.best.value, j.best.worst_ratio);
    return Status::Internal("controller 'static': no fixed setting of " + names +
                            " is safe on calibration seeds " +
                            nlohmann::json(env.calibration_seeds).dump() + b +
                            "; an unsafe fixed setting is never a baseline");
  }
  out.a = j.inner;
  out.cal = j.best;
  out.cal.episodes = j.episodes;
  out.setting = j.hold;
  if (search != nullptr) {
    nlohmann::json per = nlohmann::json::object();
    for (size_t i = 0; i < j.per_actuator.size(); ++i) {
      const StaticCalibration& c = j.per_actuator[i].inner;
      nlohmann::json e = {{"safe_found", c.found}, {"completed_tokens", c.completed_tokens}};
      for (int q = 0; q < kNumKnobs; ++q) {
        if (!std::isnan(j.per_actuator[i].knobs[q])) {
          e[std::string(kKnobNames[q])] = j.per_actuator[i].knobs[q];
        }
      }
      e[j.inner.name()] = c.value;
      per[j.per_actuator_of[i].name()] = e;
    }
    *search = {{"actuators", names},
               {"method", jc.refine ? "per-actuator optima + coarse joint grid + pattern search"
                                    : "per-actuator optima + coarse joint grid"},
               {"grid", j.grid},
               {"points", j.points},
               {"grid_points", j.grid_points},
               {"episodes", j.episodes},
               {"grid_best_completed_tokens", j.grid_best_tokens},
               {"best_completed_tokens", j.best.completed_tokens},
               {"per_actuator", per}};
  }
  return out;
}

// A calibration as the row's notes report it (notes["calibration"]).
nlohmann::json calibration_json(const ControllerEnv& env, const StaticCalibration& cal) {
  return {{"seeds", env.calibration_seeds},
          {"value", cal.value},
          {"fraction", cal.fraction},
          {"worst_window_ratio", cal.worst_ratio},
          {"safe_found", cal.found},
          {"episodes", cal.episodes},
          {"completed_tokens", cal.completed_tokens}};
}

nlohmann::json setting_json(const StaticSetting& s) {
  nlohmann::json set = nlohmann::json::object();
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!std::isnan(s.setting[q])) set[std::string(kKnobNames[q])] = s.setting[q];
  }
  set[s.a.name()] = s.cal.value;
  return set;
}

// static with recal_s: a calibration at every t_k = k·recal_s on plants whose workload is as
// at t_k (env.make_plant_at), against the budget in force at t_k, over calib_s (the operator's
// recalibration) or, with calib_s = 0, over the whole segment [t_k, t_k+1) (the hindsight
// per-segment fixed setting: an upper reference no one can deploy). Cost of a recalibration
// (k >= 1): its calibration episodes' GPU time, episodes x span; the lost work is stated in
// the notes (recalibration_cost_s) and, for the operator's arm, counted in the report
// (docs/control.md "Baselines on scenarios that change").
Result<PreparedController> prepare_static_schedule(const DeclaredOptions& o,
                                                   const ControllerEnv& env,
                                                   const std::vector<Actuator>& acts,
                                                   const KnobValues& hold, const std::string& names,
                                                   PreparedController p) {
  const double period = o.number("period_s");
  const double recal = o.number("recal_s"), calib = o.number("calib_s");
  if (!env.make_plant_at) {
    return Status::InvalidArgument(
        "controller 'static': recal_s needs a plant that can be built as at a later time (the "
        "simulator)");
  }
  const bool hindsight = calib <= 0;
  std::vector<ScheduledStaticController::Segment> segs;
  nlohmann::json seg_notes = nlohmann::json::array();
  double cost_s = 0;
  int episodes = 0;
  StaticSetting first;
  for (double t0 = 0; t0 < env.duration_s - 1e-9; t0 += recal) {
    const double seg_end = std::min(env.duration_s, t0 + recal);
    const double span = hindsight ? seg_end - t0 : std::min(calib, env.duration_s - t0);
    BudgetSchedule b;
    b.entries.push_back({0, env.budget.at(t0)});  // the budget in force at t0: no look-ahead
    // recal=inner: after the first calibration only its inner actuator (the cap when searched)
    // is searched again, the other knobs held at the first calibration's values.
    std::vector<Actuator> acts_k = acts;
    KnobValues hold_k = hold;
    std::string names_k = names;
    if (!segs.empty() && o.text("recal") == "inner") {
      acts_k = {first.a};
      hold_k = first.setting;
      if (first.a.kind == Actuator::Kind::kKnob) hold_k[first.a.index()] = kUnset;
      names_k = first.a.name();
    }
    auto r =
        calibrate_setting(o, env, env.make_plant_at(t0), b, span, acts_k, hold_k, names_k, nullptr);
    if (!r.ok()) {
      return r.status().with_context("static recalibration at " + fmt::format("{:g}", t0) + " s");
    }
    const StaticSetting& s = *r;
    if (segs.empty()) first = s;
    episodes += s.cal.episodes;
    const double seg_cost = t0 > 0 ? s.cal.episodes * span : 0;
    cost_s += seg_cost;
    nlohmann::json n = setting_json(s);
    seg_notes.push_back({{"start_s", t0},
                         {"calibration_span_s", span},
                         {"episodes", s.cal.episodes},
                         {"worst_window_ratio", s.cal.worst_ratio},
                         {"completed_tokens", s.cal.completed_tokens},
                         {"cost_s", seg_cost},
                         {"setting", n}});
    segs.push_back({t0, StaticController(s.a, s.cal.fraction, kUnset, period, s.setting)});
  }
  p.notes["schedule"] = seg_notes;
  p.notes["calibration_episodes"] = episodes;
  p.notes["kind"] =
      hindsight ? "hindsight per-segment fixed setting (each segment calibrated on its whole "
                  "span: an upper reference no one can deploy)"
                : "recalibrated every recal_s on the first calib_s of the workload as it is "
                  "then (the operator's alternative)";
  // The recalibrations' calibration runs take the node from training for cost_s (the first
  // calibration is every static's and is not counted here).
  p.notes["recalibration_cost_s"] = hindsight ? 0.0 : cost_s;
  p.make = [segs, period](uint64_t) {
    return std::make_unique<ScheduledStaticController>(segs, period);
  };
  return p;
}

// static:schedule=levels (a budget schedule announced in advance, e.g. a grid event): one
// fixed setting per budget level, each calibrated on that level alone over the episode,
// switched at the schedule's times (a drop one budget window early, so the trailing window is
// under the new level when it starts; a rise at its time). schedule=nominal: calibrated on the
// first level only and held (what an operator who was not told runs; pair it with --shield).
Result<PreparedController> prepare_static_levels(const DeclaredOptions& o, const ControllerEnv& env,
                                                 const std::vector<Actuator>& acts,
                                                 const KnobValues& hold, const std::string& names,
                                                 const std::string& schedule,
                                                 PreparedController p) {
  const double period = o.number("period_s");
  std::vector<ScheduledStaticController::Segment> segs;
  nlohmann::json levels = nlohmann::json::array();
  const double window_s = env.budget.entries.front().budget.window_s;
  std::map<double, StaticSetting> by_level;  // each budget level calibrated once
  double episodes = 0;                       // calibration episodes, all levels
  const size_t n = schedule == "nominal" ? 1 : env.budget.entries.size();
  for (size_t i = 0; i < n; ++i) {
    const BudgetSchedule::Entry& e = env.budget.entries[i];
    auto it = by_level.find(e.budget.watts);
    nlohmann::json notes = nlohmann::json::object();
    if (it == by_level.end()) {
      BudgetSchedule level;
      level.entries.push_back({0.0, e.budget});
      nlohmann::json search;
      FW_ASSIGN_OR_RETURN(StaticSetting s,
                          calibrate_setting(o, env, env.make_plant, level, env.duration_s, acts,
                                            hold, names, &search));
      if (!search.is_null()) notes["search"] = search;
      notes["searched"] = names;
      notes["actuator"] = s.a.name();
      notes["setting"] = setting_json(s);
      notes["calibration"] = calibration_json(env, s.cal);
      it = by_level.emplace(e.budget.watts, s).first;
      episodes += s.cal.episodes;
    }
    const StaticSetting& s = it->second;
    double at = e.start_s;
    if (i > 0 && e.budget.watts < env.budget.entries[i - 1].budget.watts) {
      at = std::max(segs.empty() ? 0.0 : segs.back().switch_s, e.start_s - window_s);
    }
    if (i == 0) at = 0;
    segs.push_back({at, StaticController(s.a, s.cal.fraction, kUnset, period, s.setting)});
    levels.push_back(
        {{"budget_w", e.budget.watts},
         {"start_s", e.start_s},
         {"switch_s", at},
         {"setting", setting_json(s)},
         {"calibration", notes.empty() ? nlohmann::json("as the same level above") : notes}});
  }
  p.notes["schedule"] = schedule;
  p.notes["levels"] = levels;
  p.notes["setup_cost"] =
      setup_cost("calibration per budget level (simulated episodes on the calibration seeds)",
                 episodes, env.duration_s, static_cast<double>(env.info.gpus.size()));
  p.make = [segs, period](uint64_t) {
    return std::make_unique<ScheduledStaticController>(segs, period);
  };
  return p;
}

// static: pins from the options, then a fixed value or a calibration on the env's plants
// (calibrate_setting()); with recal_s a calibration per segment (prepare_static_schedule()).
// calib_s > 0 calibrates on the first calib_s of the episode only (the operator's
// information on a workload that changes: the whole episode would be hindsight).
Result<PreparedController> prepare_static(const DeclaredOptions& o, const ControllerEnv& env) {
  const double period = o.number("period_s");
  PreparedController p;
  KnobValues hold = kNoKnobs;
  for (int q = 0; q < kNumKnobs; ++q) {
    const std::string k(kKnobNames[q]);
    if (!kActuatorTable[q].static_pin || !o.has(k)) continue;
    if (o.text("knob") == k) {
      return Status::InvalidArgument("controller 'static': " + k +
                                     "= pins the actuator itself; use value=");
    }
    hold[q] = o.number(k);
    p.notes["hold"][k] = hold[q];
  }
  if (o.has("value")) {  // a given setting: knob=auto is resolve_actuator()'s auto
    FW_ASSIGN_OR_RETURN(Actuator a, actuator_option(o, env));
    const double v = o.number("value");
    p.notes["actuator"] = a.name();
    p.notes["value"] = v;
    p.make = [a, v, period, hold](uint64_t) {
      return std::make_unique<StaticController>(a, 1.0, v, period, hold);
    };
    return p;
  }
  if (!env.make_plant || env.calibration_seeds.empty()) {
    return Status::InvalidArgument("static: no plant factory to calibrate on; give value=");
  }
  FW_ASSIGN_OR_RETURN(std::vector<Actuator> acts, static_actuators(o, env, hold));
  std::string names;  // what was searched (--reference auto matches on it)
  for (const Actuator& x : acts) names += (names.empty() ? "" : "+") + x.name();
  const std::string schedule = o.text("schedule");
  if (schedule != "off" && env.budget.entries.size() >= 2) {
    if (o.number("recal_s") > 0) {
      return Status::InvalidArgument(
          "static: schedule= and recal_s= are two different "
          "schedules; give one");
    }
    return prepare_static_levels(o, env, acts, hold, names, schedule, p);
  }
  p.notes["searched"] = names;
  if (o.number("recal_s") > 0) return prepare_static_schedule(o, env, acts, hold, names, p);
  const double calib = o.number("calib_s");
  const double span = calib > 0 ? std::min(calib, env.duration_s) : env.duration_s;
  nlohmann::json search;
  FW_ASSIGN_OR_RETURN(StaticSetting s, calibrate_setting(o, env, env.make_plant, env.budget, span,
                                                         acts, hold, names, &search));
  if (!search.is_null()) p.notes["search"] = search;
  const Actuator a = s.a;
  const StaticCalibration& cal = s.cal;
  p.notes["actuator"] = a.name();
  p.notes["setting"] = setting_json(s);
  p.notes["calibration"] = calibration_json(env, cal);
  if (calib > 0) p.notes["calibration"]["span_s"] = span;
  p.notes["setup_cost"] = setup_cost("calibration (simulated episodes on the calibration seeds)",
                                     cal.episodes, span, static_cast<double>(env.info.gpus.size()));
  const double f = cal.fraction;
  const KnobValues setting = s.setting;
  p.make = [a, f, period, setting](uint64_t) {
    return std::make_unique<StaticController>(a, f, kUnset, period, setting);
  };
  return p;
}

ControllerEntry static_entry() {
  // One pin option per table row with static_pin, in row order, bounded by the row's keys.
  std::vector<D> pins;
  for (int q = 0; q < kNumKnobs; ++q) {
    const ActuatorDef& a = kActuatorTable[q];
    if (!a.static_pin) continue;
    pins.push_back(D::number(std::string(a.name), "", a.keys.lo, a.keys.hi,
                             "pin this knob for every job (calibrate the actuator with it held)"));
  }
  ControllerEntry e{
      "static",
      "safe static setting: the fixed setting whose worst trailing budget-window mean stayed "
      "under budget in calibration runs on seeds disjoint from the evaluation seeds; with "
      "several actuators (knob=auto or A+B) they are searched jointly (per-actuator optima, "
      "a coarse joint grid, a pattern search) and the safe setting with the most "
      "completed-step tokens kept; fails when none is safe",
      "",
      {D::text("knob", "auto",
               "actuators: auto (every knob the jobs expose and caps, searched jointly), " +
                   actuator_names() + ", or a joint list A+B"),
       D::number("value", "", 0, 1e6,
                 "use this setting instead of calibrating (knob value or cap W)"),
       D::integer("candidates", "12", 2, 1000, "settings tried in the coarse calibration scan"),
       D::integer("grid", "0", 0, 1000,
                  "joint search: coarse grid points per outer knob; 0 = auto (5 with the "
                  "cap, every rung for knobs alone up to 4096 points)"),
       D::choice("refine", "on", {"on", "off"},
                 "joint search: pattern search from the grid's best point"),
       D::choice("schedule", "off", {"off", "levels", "nominal"},
                 "with a budget schedule: off = one setting safe under all of it; levels = "
                 "one setting per budget level, each calibrated on that level, switched at "
                 "the schedule's times (a drop one window early); nominal = calibrated on "
                 "the first level only and held (pair with --shield)"),
       D::number("calib_s", "0", 0, 1e8,
                 "calibrate on the first calib_s of the episode only (the operator's "
                 "information when the workload changes); 0: the whole episode"),
       D::number("recal_s", "0", 0, 1e8,
                 "recalibrate every recal_s on the workload as it is then (over calib_s; "
                 "with calib_s 0 each segment on its whole span: the hindsight per-segment "
                 "reference); 0: never"),
       D::choice("recal", "joint", {"joint", "inner"},
                 "what a recalibration searches: joint (the whole search again) or inner (the "
                 "first calibration's inner actuator, e.g. the cap, other knobs held)"),
       period_option("10")},
      prepare_static};
  auto at = e.options.begin();  // the pins follow `schedule`, as --list has always shown them
  while (at != e.options.end() && at->name != "schedule") ++at;
  e.options.insert(at == e.options.end() ? at : at + 1, pins.begin(), pins.end());
  return e;
}

ControllerEntry fleet_entry() {
  return {
      "fleet",
      "split a fleet budget; hold each job to its share (gen_concurrency + caps, PI)",
      "",
      {period_option("5"),
       D::number("measure_s", "5", 0.1, 1e6, "trailing span of each job's demand, s"),
       D::number("target", "0.95", 0.01, 1, "fraction of the budget the shares add up to"),
       D::number("grow", "0.1", 0, 10, "a share may exceed the job's demand by this fraction"),
       D::choice("weight", "nameplate", {"nameplate", "demand"},
                 "split weights: nameplate or demand"),
       D::number("ki", "1.5", 0, 100, "integral gain (log-concurrency per unit relative error)"),
       D::number("kp", "1.0", 0, 100, "proportional gain"),
       D::choice("caps", "on", {"on", "off"}, "power caps as a second actuator: on or off"),
       D::number("cap_ki", "0.1", 0, 100,
                 "cap integral gain (W of total cap per W of fleet excess)"),
       D::number("cap_kp", "0.5", 0, 100, "cap proportional gain")},
      [](const DeclaredOptions& o, const ControllerEnv&) -> Result<PreparedController> {
        FleetControllerConfig c;
        c.cap_ki = o.number("cap_ki");
        c.cap_kp = o.number("cap_kp");
        c.caps = o.text("caps") == "on";
        c.period_s = o.number("period_s");
        c.measure_s = o.number("measure_s");
        c.target = o.number("target");
        c.grow = o.number("grow");
        c.ki = o.number("ki");
        c.kp = o.number("kp");
        c.weight = o.text("weight") == "nameplate" ? FleetControllerConfig::Weight::kNameplate
                                                   : FleetControllerConfig::Weight::kDemand;
        return PreparedController{[c](uint64_t) { return std::make_unique<FleetController>(c); }};
      }};
}

ControllerEntry threshold_entry() {
  return {"threshold",
          "hysteresis: step down above upper x budget, up below lower x budget",
          "",
          {knob_option(),
           D::number("upper", "0.9", 0.01, 10, "step down above this fraction of budget"),
           D::number("lower", "0.7", 0, 10, "step up below this fraction of budget"),
           D::number("measure_s", "0", 0, 1e6, "trailing span measured, s (0: the budget window)"),
           D::integer("step", "1", 1, 1000, "rungs per step"), period_option("10")},
          [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
            ThresholdConfig c;
            FW_ASSIGN_OR_RETURN(c.actuator, actuator_option(o, env));
            c.upper = o.number("upper");
            c.lower = o.number("lower");
            c.measure_s = o.number("measure_s");
            c.step_rungs = o.integer("step");
            c.period_s = o.number("period_s");
            if (!(c.lower < c.upper)) {
              return Status::InvalidArgument("threshold: lower must be below upper");
            }
            return PreparedController{
                [c](uint64_t) { return std::make_unique<ThresholdController>(c); }};
          }};
}

// The per-GPU cap study's arms (docs/caps.md), as ordinary controllers.
ControllerEntry uniform_cap_entry() {
  return {"uniform",
          "one fixed cap for every GPU from t = 0 (a point of the uniform static cap frontier)",
          "",
          {D::number("cap_w", "", 1, 1e5, "the cap every GPU holds, W (required)")},
          [](const DeclaredOptions& o, const ControllerEnv&) -> Result<PreparedController> {
            if (!o.has("cap_w")) {
              return Status::InvalidArgument("uniform: cap_w is required (e.g. uniform:cap_w=250)");
            }
            const double cap = o.number("cap_w");
            return PreparedController{
                [cap](uint64_t) { return std::make_unique<FixedCapController>(cap); }};
          }};
}

ControllerEntry per_gpu_static_entry() {
  return {"per-gpu-static",
          "per-GPU caps set once from a calibration span of the same run (cap_arms.hpp): "
          "P0 + ratio x (busy power - P0), P0 = idle_frac x nameplate",
          "",
          {D::number("ratio", "0.8", 0.01, 1, "fraction of each GPU's busy dynamic power kept"),
           D::number("calib_s", "60", 1, 1e6,
                     "uncapped calibration span after the first busy "
                     "sample, s"),
           D::number("idle_frac", "0.2", 0, 0.9, "share of nameplate that does not follow load")},
          [](const DeclaredOptions& o, const ControllerEnv&) -> Result<PreparedController> {
            const double r = o.number("ratio"), calib = o.number("calib_s");
            const double idle = o.number("idle_frac");
            return PreparedController{[r, calib, idle](uint64_t) {
              return std::make_unique<PerGpuStaticController>(r, calib, idle);
            }};
          }};
}

ControllerEntry pid_entry() {
  return {"pid",
          "PID on the power error (fraction of budget) with anti-windup",
          "",
          {knob_option(),
           D::number("kp", "0.3", 0, 1e3, "proportional gain (actuator fraction per unit error)"),
           D::number("ki", "0.005", 0, 1e3, "integral gain (per unit error per s)"),
           D::number("kd", "0", 0, 1e3, "derivative gain (s)"),
           D::number("target", "0.95", 0.01, 2, "fraction of budget aimed at"),
           D::choice("signal", "peak", {"peak", "mean"},
                     "peak: largest rolling budget-window mean in the last measure_s; mean: "
                     "trailing mean over measure_s"),
           D::number("measure_s", "0", 0, 1e6,
                     "span measured, s (0: 120 for peak, the budget window for mean)"),
           period_option("30")},
          [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
            PidConfig c;
            FW_ASSIGN_OR_RETURN(c.actuator, actuator_option(o, env));
            c.kp = o.number("kp");
            c.ki = o.number("ki");
            c.kd = o.number("kd");
            c.target = o.number("target");
            c.measure_s = o.number("measure_s");
            c.period_s = o.number("period_s");
            c.signal =
                o.text("signal") == "peak" ? PidConfig::Signal::kPeak : PidConfig::Signal::kMean;
            return PreparedController{[c](uint64_t) { return std::make_unique<PidController>(c); }};
          }};
}

ControllerEntry zeus_entry() {
  return {
      "zeus",
      "Zeus power-limit optimizer (NSDI'23): profile caps, then hold the one minimising "
      "eta*energy + (1-eta)*max_power*time per token; budget-blind as published",
      "",
      {D::number("eta", "0.5", 0, 1, "energy/time trade-off, 0..1"),
       D::number("step_w", "25", 1, 1000, "cap stride while profiling, W"),
       D::integer("warmup_steps", "1", 0, 100000, "training steps let pass after each cap change"),
       D::integer("profile_steps", "1", 1, 100000, "training steps measured per cap"),
       D::number("min_warmup_s", "5", 0, 1e6, "minimum warm-up per cap, s"),
       D::number("min_profile_s", "30", 0, 1e6, "minimum measurement per cap, s"),
       D::number("max_phase_s", "300", 1, 1e6, "a phase with no new step ends after this, s")},
      [](const DeclaredOptions& o, const ControllerEnv&) -> Result<PreparedController> {
        ZeusConfig c;
        c.eta = o.number("eta");
        c.cap_step_w = o.number("step_w");
        c.warmup_steps = o.integer("warmup_steps");
        c.profile_steps = o.integer("profile_steps");
        c.min_warmup_s = o.number("min_warmup_s");
        c.min_profile_s = o.number("min_profile_s");
        c.max_phase_s = o.number("max_phase_s");
        PreparedController p{[c](uint64_t) { return std::make_unique<ZeusController>(c); }};
        // Its profiling (every cap from the top in step_w strides) runs inside the episode:
        // its cost is in the row's own tokens, not before it.
        p.notes["setup_cost"] = {{"what", "profiling inside the episode (in its tokens)"},
                                 {"gpu_h", 0.0}};
        return p;
      }};
}

// The look-ahead's work is exponential in the actuators: every decision imagines
// candidates^actuators settings for horizon_s each, and the plan runs fixed_candidates^actuators
// whole episodes. Beyond these bounds (about 30x and 6x the defaults on three actuators) a run
// takes hours: refused with the numbers instead.
constexpr double kMaxLookaheadSamplesPerDecision = 5e6;
constexpr double kMaxLookaheadFixedPlans = 1e4;

Status check_lookahead_cost(const DeclaredOptions& o, const OracleConfig& c,
                            double sample_period_s) {
  const double n = static_cast<double>(c.actuators.size());
  const double settings = std::pow(static_cast<double>(c.candidates), n);
  const double samples = settings * c.horizon_s / std::max(sample_period_s, 1e-3);
  const double fixed = std::pow(static_cast<double>(o.integer("fixed_candidates")), n);
  const std::string who = "controller '" + o.spec().name + "': ";
  if (samples > kMaxLookaheadSamplesPerDecision) {
    return Status::InvalidArgument(
        who +
        fmt::format("{:.0f} settings ({} candidates ^ {} actuators) x {:g} s horizon = {:.3g} "
                    "imagined samples per decision, more than {:g}: give fewer candidates, "
                    "a shorter horizon_s or fewer knobs",
                    settings, c.candidates, c.actuators.size(), c.horizon_s, samples,
                    kMaxLookaheadSamplesPerDecision));
  }
  if (fixed > kMaxLookaheadFixedPlans) {
    return Status::InvalidArgument(
        who + fmt::format("fixed_candidates ^ {} actuators = {:g} whole episodes, more than {:g}: "
                          "give fewer fixed_candidates or fewer knobs",
                          c.actuators.size(), fixed, kMaxLookaheadFixedPlans));
  }
  return Status::Ok();
}

// lookahead, and oracle, its former name (kept as an alias).
ControllerEntry lookahead_entry(const char* name) {
  return {name,
          std::string(name) == std::string("oracle")
              ? "alias of lookahead (its former name)"
              : "look-ahead reference with perfect foresight: per seed, the better of a greedy "
                "receding-horizon search and every fixed setting of its actuators on a grid (one "
                "that breaks no more windows); a reference, not a bound (simulated plant only)",
          "",
          {D::text("knob", "all",
                   "actuators searched: all (every knob every job exposes, and caps), auto, " +
                       actuator_names() + ", or a '+' list"),
           D::number("period_s", "15", 0.1, 1e6, "re-planning period, s"),
           D::number("horizon_s", "120", 0.5, 1e5, "look-ahead per candidate, s"),
           D::integer("candidates", "9", 2, 256, "settings tried per actuator per decision"),
           D::integer("fixed_candidates", "12", 0, 64,
                      "fixed settings per actuator also tried for the whole episode (the static "
                      "calibration's coarse grid; every combination); 0 or 1: the greedy alone"),
           D::number("margin", "0", 0, 0.9, "fraction of budget kept free"),
           D::choice("windows", "tumbling", {"tumbling", "sliding"},
                     "feasibility rule: tumbling (aligned to t = 0) or sliding (trailing window at "
                     "every sample)")},
          [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
            if (env.real_plant) {
              return Status::InvalidArgument(
                  "controller '" + o.spec().name +
                  "' is a reference for the simulator only: it looks ahead by cloning the "
                  "plant, which real GPUs cannot be (it would never act); use a sim: backend");
            }
            OracleConfig c;
            c.sliding = o.text("windows") == "sliding";
            auto acts = resolve_actuators(o.text("knob"), env.info);
            if (!acts.ok()) {
              return Status::InvalidArgument("controller '" + o.spec().name + "': knob=" +
                                             o.text("knob") + ": " + acts.status().message());
            }
            c.actuators = *acts;
            const bool has_caps = std::any_of(c.actuators.begin(), c.actuators.end(), [](auto& a) {
              return a.kind == Actuator::Kind::kCaps;
            });
            if (o.text("knob") == "all" && !has_caps) {
              c.actuators.push_back(Actuator::of_index(kCapActuator));
            }
            c.schedule = env.budget;
            c.period_s = o.number("period_s");
            c.horizon_s = o.number("horizon_s");
            c.candidates = o.integer("candidates");
            c.margin = o.number("margin");
            FW_RETURN_IF_ERROR(check_lookahead_cost(o, c, env.sample_period_s));
            PreparedController p;
            if (!env.make_plant) {  // no plant to plan on: the greedy search alone
              p.make = [c](uint64_t) { return std::make_unique<OracleController>(c); };
              return p;
            }
            LookaheadPlanConfig pc;
            pc.greedy = c;
            pc.fixed_candidates = o.integer("fixed_candidates");
            pc.budget = env.budget;
            pc.loop.sample_period_s = env.sample_period_s;
            pc.loop.duration_s = env.duration_s;
            pc.limiter = env.limiter;
            // Which plan won on each seed, for the row's notes (episodes run on several threads).
            auto log = std::make_shared<SeedLog>();
            const PlantFactory make_plant = env.make_plant;
            p.make = [pc, make_plant, log](uint64_t seed) -> std::unique_ptr<Controller> {
              auto plan = plan_lookahead(make_plant, pc, seed);
              if (!plan.ok()) {  // the real episode reports the failure, if it is the plant's
                log->set(seed, "greedy (plan failed: " + plan.status().message() + ")");
                return std::make_unique<OracleController>(pc.greedy);
              }
              log->set(seed, plan->description);
              return std::make_unique<LookaheadController>(pc.greedy.actuators, pc.greedy.period_s,
                                                           std::move(plan).value());
            };
            p.finish = [log](nlohmann::json& notes) { notes["plan_by_seed"] = log->json(); };
            return p;
          }};
}

// The policy file a spec names: anywhere, or confined to env.policy_dirs when they are set.
Result<rl::Policy> load_policy(const std::string& path, const ControllerEnv& env) {
  if (!env.policy_dirs) return rl::Policy::load(path);
  FW_ASSIGN_OR_RETURN(const std::string text,
                      read_confined_file(path, *env.policy_dirs, "policy_dirs"));
  return rl::Policy::parse(text, path);
}

// A controller built from a policy file (ppo:PATH, capnet:PATH): the file is loaded and
// checked once (`check` may refuse it for this plant), then shared by one controller per
// episode. The notes name the policy, its period and metadata[note_key] (else note_default).
template <class C>
Result<PreparedController> prepare_from_policy(
    const std::string& name, const DeclaredOptions& o, const ControllerEnv& env,
    const std::function<Status(const rl::Policy&)>& check, const char* note_key,
    const nlohmann::json& note_default) {
  const double period = o.number("period_s");
  const std::string& path = o.spec().positional;
  auto policy = load_policy(path, env);
  if (!policy.ok()) return Status::InvalidArgument(name + ": " + policy.status().message());
  if (check) FW_RETURN_IF_ERROR(check(*policy).with_context(name + ":" + path));
  auto probe = C::create(*policy, period);  // validates the specs
  if (!probe.ok()) return probe.status().with_context(name + ":" + path);
  PreparedController p;
  p.notes = {{"policy", path},
             {"period_s", (*probe)->period_s()},
             {note_key, policy->metadata().value(note_key, note_default)},
             {"training_seed", policy->metadata().value("training_seed", nlohmann::json())}};
  // Training cost, from the policy's metadata: decisions × decision period of simulated job
  // time on the training plant's GPUs (PPO), or episodes × episode length (capnet's ES; its
  // scenarios vary in size, so GPUs per episode are not recorded: 1 is a lower bound).
  const nlohmann::json& md = policy->metadata();
  if (md.contains("total_steps") && md.contains("decision_period_s")) {
    const double gpus = md.contains("gpu_models") ? md["gpu_models"].size() : 1.0;
    p.notes["setup_cost"] =
        setup_cost("training (simulated decision steps x period)", md["total_steps"].get<double>(),
                   md["decision_period_s"].get<double>(), gpus);
  } else if (md.contains("episodes") && md.contains("recipe") &&
             md["recipe"].contains("episode_s")) {
    p.notes["setup_cost"] =
        setup_cost("training (simulated episodes; >= 1 GPU each)", md["episodes"].get<double>(),
                   md["recipe"]["episode_s"].get<double>(), 1.0);
  }
  rl::Policy shared = std::move(policy).value();
  p.make = [shared, period](uint64_t) -> std::unique_ptr<Controller> {
    return std::move(C::create(shared, period)).value();
  };
  return p;
}

Result<PreparedController> prepare_ppo(const DeclaredOptions& o, const ControllerEnv& env) {
  const PlantInfo info = env.info;
  return prepare_from_policy<rl::PpoController>(
      "ppo", o, env,
      [info](const rl::Policy& pol) { return rl::PpoController::check_plant(pol, info); },
      "scenario_family", nlohmann::json(""));
}

ControllerEntry ppo_entry() {
  return {"ppo",
          "PPO meta-controller from a policy file (flexwatt train): moves gen_concurrency and "
          "group_size from measured power",
          "PATH",
          {D::number("period_s", "", 0, 1e6, "decision period, s (default: the policy's)")},
          prepare_ppo};
}

Result<PreparedController> prepare_capnet(const DeclaredOptions& o, const ControllerEnv& env) {
  return prepare_from_policy<rl::CapNetController>("capnet", o, env, nullptr, "alpha",
                                                   nlohmann::json());
}

ControllerEntry capnet_entry() {
  return {"capnet",
          "per-GPU power caps from one shared MLP (flexwatt train --task caps): every 10 s, "
          "each GPU's cap from its power, clock, utilisation and its job's progress",
          "PATH",
          {D::number("period_s", "", 0, 1e6, "decision period, s (default: the policy's)")},
          prepare_capnet};
}

ControllerEntry capnet_online_entry() {
  return {"capnet-online",
          "per-GPU caps for a pipeline job by an online search (capnet_online_controller.hpp): "
          "no profile, no training; lowers the GPUs that wait until the step time moves, "
          "follows a straggler pipeline and releases when it recovers",
          "",
          {D::integer("job", "0", 0, 4096, "the pipeline job's index"),
           D::integer("stages", "0", 0, 4096,
                      "GPUs per pipeline (0: the simulated job's stages, else one pipeline)"),
           D::number("target", "0", 0, 0.5,
                     "slowdown the search aims at (fraction; 0: loss_max - one iteration over "
                     "horizon_s)"),
           D::number("loss_max", "0.012", 0.0001, 0.5,
                     "completed-step loss bound of the target rule (fraction)"),
           D::number("horizon_s", "3600", 1, 1e7, "scored span of the target rule, s"),
           D::number("band", "0.0005", 0, 0.5, "dead band around the target (fraction)"),
           D::number("calib_s", "30", 0, 1e5,
                     "uncapped reference span after the first busy "
                     "sample, s"),
           D::number("gain", "0.5", 0.0, 10, "lowering step per unit of slack, of power"),
           D::number("probe", "0.02", 0.0, 1, "lowering step of every GPU, of power"),
           D::number("excess_gain", "0.5", 0.001, 100, "raising step per relative excess loss"),
           D::number("max_step", "0.05", 0.001, 1, "largest lowering per decision, of TDP"),
           D::number("cross_gain", "0.5", 0, 10,
                     "lowering step per unit of cross-pipeline slack, of power"),
           period_option("10")},
          [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
            CapNetOnlineConfig c;
            c.job = static_cast<int>(o.number("job"));
            c.stages = static_cast<int>(o.number("stages"));
            if (c.stages == 0 && env.make_plant && !env.real_plant) {
              auto plant = env.make_plant(1);
              const auto* cl = dynamic_cast<const sim::Cluster*>(plant.get());
              if (cl != nullptr && c.job < static_cast<int>(cl->info().jobs.size()) &&
                  cl->job_spec(c.job).kind == sim::JobKind::kPipeline) {
                c.stages = static_cast<int>(cl->job_spec(c.job).pipeline.stages.size());
              }
            }
            c.target_loss = o.number("target");
            c.loss_max = o.number("loss_max");
            c.horizon_s = o.number("horizon_s");
            c.band = o.number("band");
            c.calib_s = o.number("calib_s");
            c.period_s = o.number("period_s");
            c.gain = o.number("gain");
            c.probe_frac = o.number("probe");
            c.excess_gain = o.number("excess_gain");
            c.max_step_frac = o.number("max_step");
            c.cross_gain = o.number("cross_gain");
            FW_ASSIGN_OR_RETURN(CapNetOnlineController proto, CapNetOnlineController::create(c));
            return PreparedController{
                [proto](uint64_t) { return std::make_unique<CapNetOnlineController>(proto); }};
          }};
}

ControllerEntry frontier_entry() {
  return {
      "frontier",
      "per-GPU caps from `flexwatt pipeline plan` for a pipeline job (frontier_controller.hpp): "
      "the constant per-stage plan at <= slowdown, written at step boundaries, re-planned for a "
      "straggler pipeline",
      "",
      {D::text("profile", "offline",
               "offline: the job profiled on a simulator plant at every clock; else a stage "
               "profile file (stage,instruction,frequency,time,energy)"),
       D::integer("job", "0", 0, 4096, "the pipeline job's index"),
       D::number("slowdown", "0.012", 0, 1, "largest iteration time increase planned"),
       D::integer("microbatches", "0", 0, 100000,
                  "per pipeline per iteration (0: the simulated job's; required with a file)"),
       D::integer("dp", "0", 0, 4096, "pipelines (0: the simulated job's; 1 with a file)"),
       D::number("blocking_w", "0", 0, 1e4,
                 "a waiting GPU's power (0: the simulated job's, or the Perseus figure)"),
       D::choice("averaging", "iteration", {"iteration", "compute"},
                 "what a cap bounds: power over the iteration, or while computing"),
       D::number("settle_s", "8", 0, 600, "assumed cap settling time, s"),
       D::number("measure_s", "30", 1, 1e5, "activity measured per straggler decision, s"),
       D::number("threshold", "0.03", 0.001, 1, "relative activity gap that is a straggler"),
       D::choice("mode", "constant", {"constant", "schedule"},
                 "constant: a cap per stage; schedule: a cap per stage per 1F1B phase"),
       D::number("lead_up_s", "1.5", 0, 60, "schedule: a raise written this long ahead, s"),
       D::number("lead_down_s", "0.2", 0, 60, "schedule: a lowering written this long ahead, s")},
      [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
        FrontierConfig c;
        const int job = static_cast<int>(o.number("job"));
        if (o.text("profile") == "offline") {
          if (!env.make_plant) {
            return Status::InvalidArgument("frontier: profile=offline needs a simulated plant");
          }
          auto plant = env.make_plant(1);
          const auto* cl = dynamic_cast<const sim::Cluster*>(plant.get());
          if (cl == nullptr || env.real_plant) {
            return Status::InvalidArgument("frontier: profile=offline needs a simulated plant");
          }
          if (job >= static_cast<int>(cl->info().jobs.size())) {
            return Status::InvalidArgument("frontier: job=" + std::to_string(job) +
                                           ": the plant has " +
                                           std::to_string(cl->info().jobs.size()) + " jobs");
          }
          FW_ASSIGN_OR_RETURN(c, frontier_config_for_job(cl->job_spec(job), job));
        } else {
          // A file like a policy file: in the agent only from inside policy_dirs.
          const std::string& path = o.text("profile");
          if (env.policy_dirs) {
            auto text = read_confined_file(path, *env.policy_dirs, "policy_dirs");
            if (!text.ok()) return Status::InvalidArgument("frontier: " + text.status().message());
            auto p = pipeline::parse_stage_profile(*text, path);
            if (!p.ok()) return p.status().with_context("frontier");
            c.profile = std::move(p).value();
          } else {
            auto p = pipeline::read_stage_profile(path);
            if (!p.ok()) return p.status().with_context("frontier");
            c.profile = std::move(p).value();
          }
          c.job = job;
          c.microbatches = static_cast<int>(o.number("microbatches"));
          if (c.microbatches < 1) {
            return Status::InvalidArgument("frontier: microbatches=N is required with a file");
          }
          c.dp = std::max(1, static_cast<int>(o.number("dp")));
          const hw::GpuCatalogEntry* g =
              env.info.gpus.empty() ? nullptr : hw::find_gpu(env.info.gpus.front().model);
          c.blocking_w = g ? g->blocking_w : 0;  // the catalogue's (0: unknown)
        }
        if (o.number("microbatches") > 0)
          c.microbatches = static_cast<int>(o.number("microbatches"));
        if (o.number("dp") > 0) c.dp = static_cast<int>(o.number("dp"));
        if (o.number("blocking_w") > 0) c.blocking_w = o.number("blocking_w");
        if (o.has("averaging")) c.average_over_iteration = o.text("averaging") == "iteration";
        c.slowdown_max = o.number("slowdown");
        c.settle_s = o.number("settle_s");
        c.measure_s = o.number("measure_s");
        c.threshold = o.number("threshold");
        c.schedule = o.text("mode") == "schedule";
        c.lead_up_s = o.number("lead_up_s");
        c.lead_down_s = o.number("lead_down_s");
        if (c.lead_down_s > c.lead_up_s) {
          return Status::InvalidArgument("frontier: lead_down_s must be <= lead_up_s");
        }
        FW_ASSIGN_OR_RETURN(FrontierController proto, FrontierController::create(c));
        return PreparedController{
            [proto](uint64_t) { return std::make_unique<FrontierController>(proto); }};
      }};
}

// plan:PATH — a `pipeline plan --json` file's per-stage caps on the job's GPUs, constant or its
// step-keyed schedule (plan_controller.hpp). The file is read like a policy file: anywhere, or
// only inside env.policy_dirs (the agent).
ControllerEntry plan_entry() {
  return {
      "plan",
      "per-GPU caps from a `flexwatt pipeline plan --json` file (plan_controller.hpp): each "
      "GPU the cap of the stage it runs, constant or the plan's schedule keyed to the job's "
      "step boundaries, through the limiter; plan:fleet: the plan the site coordinator "
      "publishes for the job (PUT /v1/plans/JOB), prepared again when it changes",
      "PATH",
      {D::text("stages", "",
               "GPUs per stage, stages ':'-separated, GPUs '+'-separated or ranges A-B "
               "(0-1:2-3); empty: the job's GPUs in registration order, in equal blocks"),
       D::integer("job", "0", 0, 4096, "the pipeline job's index (its GPUs, when no stages=)"),
       D::choice("schedule", "auto", {"auto", "off"},
                 "auto: follow a schedule-mode plan's segments at the job's step boundaries; "
                 "off: its constant caps"),
       D::number("min_segment_s", "2.2", 0, 1e6,
                 "a schedule is followed only while every segment lasts this long, s"),
       D::number("lead_up_s", "1.5", 0, 60, "schedule: a raise is written this long early, s"),
       D::number("lead_down_s", "0.2", 0, 60, "schedule: a lowering is written this long early, s"),
       D::number("period_s", "", 0.1, 1e6,
                 "decision period, s (default 0.5 with a schedule followed, else 2)")},
      [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
        std::string path = o.spec().positional;
        Result<std::string> text = std::string();
        int64_t fleet_revision = 0;
        if (path == "fleet") {
          // plan:fleet: the plan the site coordinator publishes for the job (by its name).
          const int job = static_cast<int>(o.number("job"));
          if (!env.fleet_plan) {
            return Status::InvalidArgument(
                "plan:fleet: this agent follows no coordinator (no `fleet:` in its config)");
          }
          if (job >= static_cast<int>(env.info.jobs.size())) {
            return Status::InvalidArgument("plan:fleet: job=" + std::to_string(job) +
                                           ": the plant has " +
                                           std::to_string(env.info.jobs.size()) + " job(s)");
          }
          const std::string& name = env.info.jobs[static_cast<size_t>(job)].name;
          auto fp = env.fleet_plan(name);
          if (!fp.ok()) return Status::InvalidArgument("plan:fleet: " + fp.status().message());
          text = std::move(fp->text);
          fleet_revision = fp->revision;
          path = "fleet plan of job " + name + " (revision " + std::to_string(fleet_revision) + ")";
        } else {
          text = env.policy_dirs ? read_confined_file(path, *env.policy_dirs, "policy_dirs")
                                 : read_text_file(path);
        }
        if (!text.ok()) return Status::InvalidArgument("plan: " + text.status().message());
        auto plan = pipeline::parse_plan_json(*text, path);
        if (!plan.ok()) return plan.status().with_context("plan");
        FW_ASSIGN_OR_RETURN(
            PlanCapsConfig c,
            plan_caps_config(*plan, o.text("stages"), static_cast<int>(o.number("job")), 2,
                             env.info, o.text("schedule") == "auto"));
        if (c.schedule.empty() && o.text("schedule") == "auto" && plan->best_mode == "schedule" &&
            plan->schedule_switches) {
          return Status::InvalidArgument(
              "plan: " + path +
              ": its schedule has no segment starts (a plan from before the step-keyed "
              "schedule): plan it again, or give schedule=off for its constant caps");
        }
        c.period_s = o.has("period_s") ? o.number("period_s") : c.schedule.empty() ? 2 : 0.5;
        c.min_segment_s = o.number("min_segment_s");
        c.lead_up_s = o.number("lead_up_s");
        c.lead_down_s = o.number("lead_down_s");
        FW_ASSIGN_OR_RETURN(PlanCapsController proto, PlanCapsController::create(c));
        // Checked against the plant as it is now (reset() checks again when jobs change).
        PlanCapsController probe = proto;
        probe.reset(env.info);
        FW_RETURN_IF_ERROR(probe.mapping());
        PreparedController p{
            [proto](uint64_t) { return std::make_unique<PlanCapsController>(proto); }};
        nlohmann::json caps = nlohmann::json::array();
        for (double w : c.stage_caps_w)
          caps.push_back(std::isnan(w) ? nlohmann::json() : nlohmann::json(w));
        p.notes = {{"plan", path},
                   {"fleet_revision",
                    fleet_revision > 0 ? nlohmann::json(fleet_revision) : nlohmann::json()},
                   {"stage_caps_w", caps},
                   {"plan_mode", plan->best_mode},
                   {"applied", c.schedule.empty() ? "constant" : "schedule"}};
        return p;
      }};
}

}  // namespace

// The feed-forward power-stabilising controller of a training site (issue #48;
// docs/stabilization.md): commands the GPUs' power smoothing from the job's announcements.
ControllerEntry stabilize_entry() {
  return {
      "stabilize",
      "feed-forward power stabilisation of a training site: GPU power smoothing (floor, ramp "
      "rates) timed from the job's announced start, stop and checkpoints; a low floor in steady "
      "training (needs a plant with power smoothing: the site simulator, or the agent on NVML "
      "with Blackwell GPUs and pre_fill=off)",
      "",
      {D::number("period_s", "0.05", 0.001, 60, "decision period, s"),
       D::number("floor_pct", "50", 0, 100, "steady floor, % of the TMP ceiling (the cap)"),
       D::number("hold_pct", "85", 0, 100, "floor around events, % of the cap"),
       D::number("low_pct", "20", 0, 100, "floor inside a checkpoint, % of the cap"),
       D::number("ramp_w_per_s", "50", 0.1, 1e5, "ramp rate at events, W/s per GPU"),
       D::number("start_ramp_w_per_s", "15", 0.1, 1e5, "ramp-up in the start's first seconds"),
       D::number("start_slow_s", "1", 0, 600, "how long the start's slow ramp-up lasts, s"),
       D::integer("pre_iters", "2", 0, 1000, "hold from this many iterations before a checkpoint"),
       D::number("pre_s", "3", 0, 600, "hold from this many s before the stop"),
       D::number("margin_s", "0.5", 0, 60, "the checkpoint's rise starts this much earlier, s"),
       D::choice("pre_fill", "on", {"on", "off"},
                 "ramp the idle GPUs up with the fill workload before the announced start")},
      [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
        StabilizingConfig c;
        c.period_s = o.number("period_s");
        c.floor_pct = o.number("floor_pct");
        c.hold_pct = o.number("hold_pct");
        c.low_pct = o.number("low_pct");
        c.ramp_w_per_s = o.number("ramp_w_per_s");
        c.start_ramp_w_per_s = o.number("start_ramp_w_per_s");
        c.start_slow_s = o.number("start_slow_s");
        c.pre_iters = o.integer("pre_iters");
        c.pre_s = o.number("pre_s");
        c.margin_s = o.number("margin_s");
        c.pre_fill = o.text("pre_fill") == "on";
        FW_RETURN_IF_ERROR(validate(c));
        // The plant must apply what the controller commands (the agent says so up front): a
        // spec this plant cannot run is bad input here (exit 2 at start, 422 at PUT), as the
        // simulator-only controllers are on real GPUs.
        if (!env.smoothing.ok()) {
          return Status::InvalidArgument("stabilize needs power smoothing on every GPU: " +
                                         env.smoothing.message());
        }
        if (c.pre_fill && !env.fill.ok()) {
          return Status::InvalidArgument("stabilize: pre_fill=on needs a fill workload: " +
                                         env.fill.message() + "; give pre_fill=off");
        }
        return PreparedController{
            [c](uint64_t) { return std::make_unique<StabilizingController>(c); }};
      }};
}

std::vector<ControllerEntry> builtin_controllers() {
  return {uncontrolled_entry(),
          static_entry(),
          fleet_entry(),
          threshold_entry(),
          pid_entry(),
          zeus_entry(),
          uniform_cap_entry(),
          per_gpu_static_entry(),
          lookahead_entry("lookahead"),
          lookahead_entry("oracle"),
          ppo_entry(),
          capnet_entry(),
          frontier_entry(),
          plan_entry(),
          capnet_online_entry(),
          mpc_entry(),
          stabilize_entry()};
}

}  // namespace fw::registry

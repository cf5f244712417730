// The baseline controllers' registry entries (control/*_controller.hpp).

#include "cli/controller_registry.hpp"

#include <algorithm>

#include "control/actuator.hpp"
#include "controllers/fleet_controller.hpp"
#include "controllers/oracle_controller.hpp"
#include "controllers/pid_controller.hpp"
#include "controllers/static_controller.hpp"
#include "controllers/threshold_controller.hpp"
#include "controllers/uncontrolled_controller.hpp"
#include "controllers/zeus_controller.hpp"
#include "rl/ppo_controller.hpp"

namespace fw::cli {

std::vector<ControllerEntry>& controller_registry() {
  static std::vector<ControllerEntry> r;
  return r;
}

namespace {

std::vector<std::string> names_of(const std::vector<ControllerOption>& o) {
  std::vector<std::string> n;
  for (const auto& x : o) n.push_back(x.name);
  return n;
}

std::string valid_names() {
  std::vector<std::string> n;
  for (const auto& e : controller_registry())
    n.push_back(e.name + (e.positional.empty() ? "" : ":" + e.positional));
  std::sort(n.begin(), n.end());
  std::string s;
  for (const auto& x : n) s += (s.empty() ? "" : ", ") + x;
  return s;
}

Result<Actuator> actuator_option(const ControllerOptions& o, const ControllerEnv& env,
                                 const std::string& fallback = "auto") {
  auto a = resolve_actuator(o.get_string("knob", fallback), env.info);
  if (!a.ok())
    return Status::InvalidArgument("controller '" + o.spec().name + "': knob=" +
                                   o.get_string("knob", fallback) + ": " + a.status().message());
  return a;
}

const ControllerOption kKnobOption{
    "knob", "auto",
    "actuator: auto (group_size, else gen_concurrency, else caps), caps, "
    "gen_concurrency, group_size"};

FW_CONTROLLER(
    {"uncontrolled",
     "knobs at the job's configured values (as it runs without flexwatt), caps at default",
     "",
     {{"period_s", "10", "decision period, s"}},
     [](const ControllerOptions& o, const ControllerEnv&) -> Result<PreparedController> {
       FW_ASSIGN_OR_RETURN(double period, o.get_double("period_s", 10, 0.1, 1e6));
       return PreparedController{
           [period](uint64_t) { return std::make_unique<UncontrolledController>(period); }};
     }});

FW_CONTROLLER(
    {"static",
     "safe static setting: the largest fixed knob value (or cap) whose worst budget-window "
     "mean stayed under budget in calibration runs on seeds disjoint from the evaluation "
     "seeds",
     "",
     {kKnobOption,
      {"value", "", "use this setting instead of calibrating (knob value or cap W)"},
      {"candidates", "12", "settings tried in the coarse calibration scan"},
      {"gen_concurrency", "", "pin this knob for every job (calibrate the actuator with it held)"},
      {"group_size", "", "pin this knob for every job (calibrate the actuator with it held)"},
      {"period_s", "10", "decision period, s"}},
     [](const ControllerOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
       FW_ASSIGN_OR_RETURN(Actuator a, actuator_option(o, env));
       FW_ASSIGN_OR_RETURN(double period, o.get_double("period_s", 10, 0.1, 1e6));
       FW_ASSIGN_OR_RETURN(int cand, o.get_int("candidates", 12, 2, 1000));
       PreparedController p;
       p.notes["actuator"] = a.name();
       KnobValues hold{kUnset, kUnset};
       for (int q = 0; q < kNumKnobs; ++q) {
         const std::string k(kKnobNames[q]);
         if (!o.has(k)) continue;
         if (a.kind == Actuator::Kind::kKnob && static_cast<int>(a.knob) == q) {
           return Status::InvalidArgument("controller 'static': " + k +
                                          "= pins the actuator itself; use value=");
         }
         FW_ASSIGN_OR_RETURN(hold[q], o.get_double(k, 0, 1, 1e6));
         p.notes["hold"][k] = hold[q];
       }
       if (o.has("value")) {
         FW_ASSIGN_OR_RETURN(double v, o.get_double("value", 0, 0, 1e6));
         p.notes["value"] = v;
         p.make = [a, v, period, hold](uint64_t) {
           return std::make_unique<StaticController>(a, 1.0, v, period, hold);
         };
         return p;
       }
       if (!env.make_plant || env.calibration_seeds.empty()) {
         return Status::InvalidArgument("static: no plant factory to calibrate on; give value=");
       }
       StaticCalibrationConfig cfg;
       cfg.actuator = a;
       cfg.seeds = env.calibration_seeds;
       cfg.duration_s = env.duration_s;
       cfg.sample_period_s = env.sample_period_s;
       cfg.limiter = env.limiter;
       cfg.max_candidates = cand;
       cfg.hold = hold;
       FW_ASSIGN_OR_RETURN(StaticCalibration cal,
                           calibrate_static(env.make_plant, env.budget, cfg));
       p.notes["calibration"] = {
           {"seeds", env.calibration_seeds}, {"value", cal.value},
           {"fraction", cal.fraction},       {"worst_window_ratio", cal.worst_ratio},
           {"safe_found", cal.found},        {"episodes", cal.episodes}};
       const double f = cal.fraction;
       p.make = [a, f, period, hold](uint64_t) {
         return std::make_unique<StaticController>(a, f, kUnset, period, hold);
       };
       return p;
     }});

FW_CONTROLLER({"fleet",
               "split a fleet budget; hold each job to its share (gen_concurrency + caps, PI)",
               "",
               {{"period_s", "5", "decision period, s"},
                {"measure_s", "5", "trailing span of each job's demand, s"},
                {"target", "0.95", "fraction of the budget the shares add up to"},
                {"grow", "0.1", "a share may exceed the job's demand by this fraction"},
                {"weight", "nameplate", "split weights: nameplate or demand"},
                {"ki", "1.5", "integral gain (log-concurrency per unit relative error)"},
                {"kp", "1.0", "proportional gain"},
                {"caps", "on", "power caps as a second actuator: on or off"},
                {"cap_ki", "0.1", "cap integral gain (W of total cap per W of fleet excess)"},
                {"cap_kp", "0.5", "cap proportional gain"}},
               [](const ControllerOptions& o, const ControllerEnv&) -> Result<PreparedController> {
                 FleetControllerConfig c;
                 FW_ASSIGN_OR_RETURN(c.cap_ki, o.get_double("cap_ki", 0.1, 0, 100));
                 FW_ASSIGN_OR_RETURN(c.cap_kp, o.get_double("cap_kp", 0.5, 0, 100));
                 const std::string caps = o.get_string("caps", "on");
                 if (caps != "on" && caps != "off")
                   return Status::InvalidArgument("fleet: caps=" + caps + ": expected on or off");
                 c.caps = caps == "on";
                 FW_ASSIGN_OR_RETURN(c.period_s, o.get_double("period_s", 5, 0.1, 1e6));
                 FW_ASSIGN_OR_RETURN(c.measure_s, o.get_double("measure_s", 5, 0.1, 1e6));
                 FW_ASSIGN_OR_RETURN(c.target, o.get_double("target", 0.95, 0.01, 1));
                 FW_ASSIGN_OR_RETURN(c.grow, o.get_double("grow", 0.1, 0, 10));
                 FW_ASSIGN_OR_RETURN(c.ki, o.get_double("ki", 1.5, 0, 100));
                 FW_ASSIGN_OR_RETURN(c.kp, o.get_double("kp", 1.0, 0, 100));
                 const std::string w = o.get_string("weight", "nameplate");
                 if (w == "nameplate") {
                   c.weight = FleetControllerConfig::Weight::kNameplate;
                 } else if (w == "demand") {
                   c.weight = FleetControllerConfig::Weight::kDemand;
                 } else {
                   return Status::InvalidArgument("fleet: weight=" + w +
                                                  ": expected nameplate or demand");
                 }
                 return PreparedController{
                     [c](uint64_t) { return std::make_unique<FleetController>(c); }};
               }});

FW_CONTROLLER({"threshold",
               "hysteresis: step down above upper x budget, up below lower x budget",
               "",
               {kKnobOption,
                {"upper", "0.9", "step down above this fraction of budget"},
                {"lower", "0.7", "step up below this fraction of budget"},
                {"measure_s", "0", "trailing span measured, s (0: the budget window)"},
                {"step", "1", "rungs per step"},
                {"period_s", "10", "decision period, s"}},
               [](const ControllerOptions& o,
                  const ControllerEnv& env) -> Result<PreparedController> {
                 ThresholdConfig c;
                 FW_ASSIGN_OR_RETURN(c.actuator, actuator_option(o, env));
                 FW_ASSIGN_OR_RETURN(c.upper, o.get_double("upper", 0.9, 0.01, 10));
                 FW_ASSIGN_OR_RETURN(c.lower, o.get_double("lower", 0.7, 0, 10));
                 FW_ASSIGN_OR_RETURN(c.measure_s, o.get_double("measure_s", 0, 0, 1e6));
                 FW_ASSIGN_OR_RETURN(c.step_rungs, o.get_int("step", 1, 1, 1000));
                 FW_ASSIGN_OR_RETURN(c.period_s, o.get_double("period_s", 10, 0.1, 1e6));
                 if (!(c.lower < c.upper)) {
                   return Status::InvalidArgument("threshold: lower must be below upper");
                 }
                 return PreparedController{
                     [c](uint64_t) { return std::make_unique<ThresholdController>(c); }};
               }});

FW_CONTROLLER(
    {"pid",
     "PID on the power error (fraction of budget) with anti-windup",
     "",
     {kKnobOption,
      {"kp", "0.3", "proportional gain (actuator fraction per unit error)"},
      {"ki", "0.005", "integral gain (per unit error per s)"},
      {"kd", "0", "derivative gain (s)"},
      {"target", "0.95", "fraction of budget aimed at"},
      {"signal", "peak",
       "peak: largest rolling budget-window mean in the last measure_s; mean: trailing "
       "mean over measure_s"},
      {"measure_s", "0", "span measured, s (0: 120 for peak, the budget window for mean)"},
      {"period_s", "30", "decision period, s"}},
     [](const ControllerOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
       PidConfig c;
       FW_ASSIGN_OR_RETURN(c.actuator, actuator_option(o, env));
       FW_ASSIGN_OR_RETURN(c.kp, o.get_double("kp", 0.3, 0, 1e3));
       FW_ASSIGN_OR_RETURN(c.ki, o.get_double("ki", 0.005, 0, 1e3));
       FW_ASSIGN_OR_RETURN(c.kd, o.get_double("kd", 0, 0, 1e3));
       FW_ASSIGN_OR_RETURN(c.target, o.get_double("target", 0.95, 0.01, 2));
       FW_ASSIGN_OR_RETURN(c.measure_s, o.get_double("measure_s", 0, 0, 1e6));
       FW_ASSIGN_OR_RETURN(c.period_s, o.get_double("period_s", 30, 0.1, 1e6));
       const std::string sig = o.get_string("signal", "peak");
       if (sig != "peak" && sig != "mean") {
         return Status::InvalidArgument("controller 'pid': signal=" + sig +
                                        ": expected peak or mean");
       }
       c.signal = sig == "peak" ? PidConfig::Signal::kPeak : PidConfig::Signal::kMean;
       return PreparedController{[c](uint64_t) { return std::make_unique<PidController>(c); }};
     }});

FW_CONTROLLER({"zeus",
               "Zeus power-limit optimizer (NSDI'23): profile caps, then hold the one minimising "
               "eta*energy + (1-eta)*max_power*time per token; budget-blind as published",
               "",
               {{"eta", "0.5", "energy/time trade-off, 0..1"},
                {"step_w", "25", "cap stride while profiling, W"},
                {"warmup_steps", "1", "training steps let pass after each cap change"},
                {"profile_steps", "1", "training steps measured per cap"},
                {"min_warmup_s", "5", "minimum warm-up per cap, s"},
                {"min_profile_s", "30", "minimum measurement per cap, s"},
                {"max_phase_s", "300", "a phase with no new step ends after this, s"}},
               [](const ControllerOptions& o, const ControllerEnv&) -> Result<PreparedController> {
                 ZeusConfig c;
                 FW_ASSIGN_OR_RETURN(c.eta, o.get_double("eta", 0.5, 0, 1));
                 FW_ASSIGN_OR_RETURN(c.cap_step_w, o.get_double("step_w", 25, 1, 1000));
                 FW_ASSIGN_OR_RETURN(c.warmup_steps, o.get_int("warmup_steps", 1, 0, 100000));
                 FW_ASSIGN_OR_RETURN(c.profile_steps, o.get_int("profile_steps", 1, 1, 100000));
                 FW_ASSIGN_OR_RETURN(c.min_warmup_s, o.get_double("min_warmup_s", 5, 0, 1e6));
                 FW_ASSIGN_OR_RETURN(c.min_profile_s, o.get_double("min_profile_s", 30, 0, 1e6));
                 FW_ASSIGN_OR_RETURN(c.max_phase_s, o.get_double("max_phase_s", 300, 1, 1e6));
                 return PreparedController{
                     [c](uint64_t) { return std::make_unique<ZeusController>(c); }};
               }});

FW_CONTROLLER(
    {"oracle",
     "upper bound with perfect foresight (clones the simulated plant; never deployable)",
     "",
     {{"knob", "all",
       "actuators searched: all (every knob every job exposes), auto, caps, "
       "gen_concurrency, group_size, or a '+' list"},
      {"period_s", "15", "re-planning period, s"},
      {"horizon_s", "120", "look-ahead per candidate, s"},
      {"candidates", "9", "settings tried per actuator per decision"},
      {"margin", "0", "fraction of budget kept free"},
      {"windows", "tumbling",
       "feasibility rule: tumbling (aligned to t = 0) or sliding (trailing window at every "
       "sample)"}},
     [](const ControllerOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
       OracleConfig c;
       const std::string rule = o.get_string("windows", "tumbling");
       if (rule != "tumbling" && rule != "sliding") {
         return Status::InvalidArgument("controller 'oracle': windows=" + rule +
                                        ": expected tumbling or sliding");
       }
       c.sliding = rule == "sliding";
       auto acts = resolve_actuators(o.get_string("knob", "all"), env.info);
       if (!acts.ok()) {
         return Status::InvalidArgument("controller 'oracle': knob=" + o.get_string("knob", "all") +
                                        ": " + acts.status().message());
       }
       c.actuators = *acts;
       FW_ASSIGN_OR_RETURN(c.period_s, o.get_double("period_s", 15, 0.1, 1e6));
       FW_ASSIGN_OR_RETURN(c.horizon_s, o.get_double("horizon_s", 120, 0.5, 1e5));
       FW_ASSIGN_OR_RETURN(c.candidates, o.get_int("candidates", 9, 2, 256));
       FW_ASSIGN_OR_RETURN(c.margin, o.get_double("margin", 0, 0, 0.9));
       return PreparedController{[c](uint64_t) { return std::make_unique<OracleController>(c); }};
     }});

FW_CONTROLLER(
    {"ppo",
     "PPO meta-controller from a policy file (flexwatt train): moves gen_concurrency and "
     "group_size from measured power",
     "PATH",
     {{"period_s", "", "decision period, s (default: the policy's)"}},
     [](const ControllerOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
       FW_ASSIGN_OR_RETURN(double period, o.get_double("period_s", 0, 0, 1e6));
       auto policy = rl::Policy::load(o.spec().positional);
       if (!policy.ok()) return Status::InvalidArgument("ppo: " + policy.status().message());
       FW_RETURN_IF_ERROR(rl::PpoController::check_plant(*policy, env.info)
                              .with_context("ppo:" + o.spec().positional));
       auto probe = rl::PpoController::create(*policy, period);  // validates the specs
       if (!probe.ok()) return probe.status().with_context("ppo:" + o.spec().positional);
       PreparedController p;
       p.notes = {{"policy", o.spec().positional},
                  {"period_s", (*probe)->period_s()},
                  {"scenario_family", policy->metadata().value("scenario_family", "")},
                  {"training_seed", policy->metadata().value("training_seed", nlohmann::json())}};
       rl::Policy shared = std::move(policy).value();
       p.make = [shared, period](uint64_t) -> std::unique_ptr<Controller> {
         return std::move(rl::PpoController::create(shared, period)).value();
       };
       return p;
     }});

}  // namespace

Result<PreparedController> prepare_controller(const ControllerSpec& spec,
                                              const ControllerEnv& env) {
  for (const ControllerEntry& e : controller_registry()) {
    if (e.name != spec.name) continue;
    const ControllerOptions o(spec);
    FW_RETURN_IF_ERROR(o.check(names_of(e.options), !e.positional.empty()));
    if (!e.positional.empty() && spec.positional.empty()) {
      return Status::InvalidArgument("controller '" + e.name + "' needs an argument: " + e.name +
                                     ":" + e.positional);
    }
    return e.prepare(o, env);
  }
  return Status::InvalidArgument("unknown controller '" + spec.name + "' (valid: " + valid_names() +
                                 "; see flexwatt eval --list)");
}

std::string controller_list_text() {
  auto entries = controller_registry();
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  std::string s;
  for (const auto& e : entries) {
    s += e.name + (e.positional.empty() ? "" : ":" + e.positional) + "\n    " + e.summary + "\n";
    for (const auto& o : e.options) {
      s += "    " + o.name + "=" + (o.default_value.empty() ? "-" : o.default_value) + "  " +
           o.help + "\n";
    }
  }
  return s;
}

nlohmann::json controller_list_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : controller_registry()) {
    nlohmann::json opts = nlohmann::json::array();
    for (const auto& o : e.options) {
      opts.push_back({{"name", o.name}, {"default", o.default_value}, {"help", o.help}});
    }
    out.push_back({{"name", e.name},
                   {"summary", e.summary},
                   {"positional", e.positional},
                   {"options", opts}});
  }
  return out;
}

}  // namespace fw::cli

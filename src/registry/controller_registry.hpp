#pragma once
// The registry of controllers by name, with their declared options: what `flexwatt eval
// --controllers pid:kp=0.5,ki=0.1,knob=gen_concurrency` and `--list` use. It lives in
// experiment/ because it wires concrete things (learned policies, calibration on simulator
// plants) that control/ must not know.
//
// Adding a controller is one entry in builtin_controllers() (builtin_controllers.cpp):
//   {"ppo", "PPO meta-controller from a policy file", "PATH",
//    {OptionDecl::number("period_s", "", 0, 1e6, "decision period, s")},
//    [](const DeclaredOptions& o, const ControllerEnv& env) -> Result<PreparedController> {
//      ... o.number("period_s") ... }}
// The options are validated against their declarations before prepare() runs; prepare()
// runs once per eval (calibration goes there), checks what depends on the plant, and
// returns a maker called once per episode. Registration is an explicit table (no static
// initialisers), so linking the registry from a static library keeps every entry.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "control/controller.hpp"
#include "control/controller_spec.hpp"
#include "control/plant.hpp"
#include "control/safety_limiter.hpp"
#include "controllers/static_calibration.hpp"
#include "core/status.hpp"
#include "registry/controller_options.hpp"
#include "sim/scenario.hpp"
#include "vocab/budget.hpp"

namespace fw::registry {

// What a factory may use. make_plant builds a fresh plant for a seed; calibration_seeds
// are disjoint from the evaluation seeds.
struct ControllerEnv {
  PlantInfo info;
  BudgetSchedule budget;
  double sample_period_s = 0.5;
  double duration_s = 600;
  PlantFactory make_plant;  // may be empty (then calibration is impossible)
  // Plants whose workload is as it is at trace time t0_s (the scenario's completion-length
  // curves shifted by t0_s; sim::GrpoParams::curve_shift_s), for a recalibration at t0_s on
  // the workload of that time, not of the episode's start. May be empty (static's recal_s
  // is then refused).
  std::function<PlantFactory(double t0_s)> make_plant_at;
  std::vector<uint64_t> calibration_seeds;
  LimiterConfig limiter;
  // The plant is real GPUs (the agent on NVML): controllers that only work on a simulated
  // plant (the look-ahead reference clones it) are refused instead of running blind.
  bool real_plant = false;
  // Where a file named in a spec (ppo:PATH, capnet:PATH) may be read from. Unset: anywhere
  // (the CLI verbs read their user's own files). Set (the agent, from policy_dirs): the path
  // must resolve inside one of these directories, `..` and symlinks resolved first, and be a
  // bounded regular file (core/confined_file.hpp); an empty list allows no file. Either way an
  // error names the path, never the file's bytes.
  std::optional<std::vector<std::string>> policy_dirs;
  // What the plant applies of Command::gpu_settings (kGpuSettingTable): Ok, or why it refuses
  // them (NotSupported naming the GPU and model, the driver, or the backend). The agent sets
  // them from its NodePlant, so a controller that needs them is refused at PUT /v1/controller
  // (422) and at start instead of failing every write; elsewhere they stay Ok and the plant's
  // write() is the check (the site simulator applies both).
  Status smoothing = Status::Ok();
  Status fill = Status::Ok();
  // Plans published through the site coordinator (`plan:fleet`; fleet/keys.hpp plan_key): the
  // plan stored for a job name, as the node's fleet link last read it, with its etcd mod
  // revision; NotFound when none is stored. Unset: the node follows no coordinator.
  struct FleetPlan {
    std::string text;
    int64_t revision = 0;
  };
  std::function<Result<FleetPlan>(const std::string& job)> fleet_plan;
  // The run's scenario as declared (the simulator's eval): what the mpc planner's twin starts
  // from, with the completion-length curves removed (registry/grpo_twin.hpp). Null
  // elsewhere (mpc is then refused).
  std::shared_ptr<const sim::Scenario> declared;
};

struct PreparedController {
  // A fresh controller for one episode; `seed` is the episode's run seed.
  std::function<std::unique_ptr<Controller>(uint64_t seed)> make;
  nlohmann::json notes = nlohmann::json::object();  // e.g. the static calibration
  // Every declared option's value as used: given or default (null when neither), by name.
  // Set by prepare_controller(); recorded in each trace's meta.json.
  nlohmann::json options = nlohmann::json::object();
  // Optional: adds what the episodes found to the row's notes (e.g. lookahead's plan per
  // seed); called once, after every episode of the row ran.
  std::function<void(nlohmann::json& notes)> finish = nullptr;
};

struct ControllerEntry {
  std::string name;
  std::string summary;
  std::string positional;  // e.g. "PATH" when it takes NAME:PATH; empty when none
  std::vector<OptionDecl> options;
  std::function<Result<PreparedController>(const DeclaredOptions&, const ControllerEnv&)> prepare;
};

// The built-in controllers, in --list JSON order.
std::vector<ControllerEntry> builtin_controllers();
// builtin_controllers(), built once.
const std::vector<ControllerEntry>& controller_registry();

// Unknown name, unknown option or a value outside its declaration → InvalidArgument
// listing the valid ones.
Result<PreparedController> prepare_controller(const ControllerSpec& spec, const ControllerEnv& env);
// "name[:POSITIONAL]  summary" and each option with its default and range, for --list.
std::string controller_list_text();
nlohmann::json controller_list_json();

}  // namespace fw::registry

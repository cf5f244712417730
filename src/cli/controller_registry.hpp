#pragma once
// The registry of controllers by name, with their options: what `flexwatt eval
// --controllers pid:kp=0.5,ki=0.1,knob=gen_concurrency` and `--list` use. It lives in cli/
// because it wires concrete things (learned policies, calibration on simulator plants)
// that control/ must not know.
//
// Adding a controller is one entry, from any cli/*.cpp file:
//   FW_CONTROLLER({"ppo", "PPO meta-controller from a policy file", "PATH",
//                  {{"period_s", "10", "decision period, s"}},
//                  [](const ControllerOptions& o, const ControllerEnv& env)
//                      -> Result<PreparedController> { ... }});
// prepare() runs once per eval (calibration goes there) and returns a maker called once
// per episode; it must validate its options and return InvalidArgument on bad values.

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "control/budget.hpp"
#include "control/controller.hpp"
#include "control/controller_spec.hpp"
#include "control/plant.hpp"
#include "control/safety_limiter.hpp"
#include "controllers/static_calibration.hpp"
#include "core/status.hpp"

namespace fw::cli {

// What a factory may use. make_plant builds a fresh plant for a seed; calibration_seeds
// are disjoint from the evaluation seeds.
struct ControllerEnv {
  PlantInfo info;
  BudgetSchedule budget;
  double sample_period_s = 0.5;
  double duration_s = 600;
  PlantFactory make_plant;  // may be empty (then calibration is impossible)
  std::vector<uint64_t> calibration_seeds;
  LimiterConfig limiter;
};

struct PreparedController {
  // A fresh controller for one episode; `seed` is the episode's run seed.
  std::function<std::unique_ptr<Controller>(uint64_t seed)> make;
  nlohmann::json notes = nlohmann::json::object();  // e.g. the static calibration
};

struct ControllerOption {
  std::string name, default_value, help;
};

struct ControllerEntry {
  std::string name;
  std::string summary;
  std::string positional;  // e.g. "PATH" when it takes NAME:PATH; empty when none
  std::vector<ControllerOption> options;
  std::function<Result<PreparedController>(const ControllerOptions&, const ControllerEnv&)> prepare;
};

std::vector<ControllerEntry>& controller_registry();

struct ControllerRegistrar {
  explicit ControllerRegistrar(ControllerEntry e) { controller_registry().push_back(std::move(e)); }
};

// Unknown name or option → InvalidArgument listing the valid ones.
Result<PreparedController> prepare_controller(const ControllerSpec& spec, const ControllerEnv& env);
// "name[:POSITIONAL]  summary" and each option with its default, for --list.
std::string controller_list_text();
nlohmann::json controller_list_json();

}  // namespace fw::cli

#define FW_CONTROLLER_CONCAT2_(a, b) a##b
#define FW_CONTROLLER_CONCAT_(a, b) FW_CONTROLLER_CONCAT2_(a, b)
#define FW_CONTROLLER(...)                                     \
  static ::fw::cli::ControllerRegistrar FW_CONTROLLER_CONCAT_( \
      fw_controller_, __LINE__)(::fw::cli::ControllerEntry __VA_ARGS__)

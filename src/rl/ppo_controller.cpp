#include "rl/ppo_controller.hpp"

#include "control/actuator.hpp"
#include "rl/plant_features.hpp"

namespace fw::rl {
namespace {

// First difference between two name lists, or "" when equal.
std::string first_difference(const std::vector<std::string>& got,
                             const std::vector<std::string>& want) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    const std::string g = i < got.size() ? got[i] : "<none>";
    const std::string w = i < want.size() ? want[i] : "<none>";
    if (g != w) return "entry " + std::to_string(i) + " is '" + g + "', expected '" + w + "'";
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<PpoController>> PpoController::create(Policy policy, double period_s) {
  const std::string obs_diff = first_difference(policy.obs_spec().names, plant_obs_spec().names);
  if (!obs_diff.empty()) {
    return Status::InvalidArgument(
        "policy observation spec does not match this flexwatt's plant observation (" + obs_diff +
        "; " + std::to_string(policy.obs_spec().dim()) + " entries, expected " +
        std::to_string(kPlantObsDim) + "): retrain it with `flexwatt train`");
  }
  FW_ASSIGN_OR_RETURN(KnobActionMode mode, knob_action_mode(policy.action_spec()));
  if (!(period_s > 0)) {
    period_s = policy.metadata().value("decision_period_s", 5.0);
    if (!(period_s > 0)) {
      return Status::InvalidArgument("policy metadata.decision_period_s must be > 0");
    }
  }
  return std::unique_ptr<PpoController>(new PpoController(std::move(policy), period_s, mode));
}

Status PpoController::check_plant(const Policy& policy, const PlantInfo& info) {
  for (const JobInfo& j : info.jobs) {
    for (const KnobRange& r : j.knob_ranges) {
      if (r.available) return Status::Ok();
    }
  }
  const std::string family = policy.metadata().value("scenario_family", std::string("?"));
  return Status::InvalidArgument("policy trained on '" + family +
                                 "' drives gen_concurrency/group_size, but no job of this plant "
                                 "exposes either knob");
}

PpoController::PpoController(Policy policy, double period_s, KnobActionMode mode)
    : policy_(std::move(policy)),
      period_s_(period_s),
      mode_(mode),
      obs_buf_(kPlantObsDim, 0.0),
      act_buf_(2, 0.0) {}

void PpoController::reset(const PlantInfo& info) { cmd_ = blank_command(info); }

const Command& PpoController::decide(const Observation& obs) {
  for (auto& k : cmd_.knobs) k = {kUnset, kUnset};
  const PlantInfo& info = *obs.plant;
  for (size_t j = 0; j < info.jobs.size() && j < cmd_.knobs.size(); ++j) {
    bool any = false;
    for (const KnobRange& r : info.jobs[j].knob_ranges) any |= r.available;
    if (!any) continue;
    build_plant_features(obs, j, obs_buf_);
    policy_.act(obs_buf_, act_buf_);
    apply_knob_action(info, obs.latest(), j, act_buf_, cmd_, mode_);
  }
  return cmd_;
}

}  // namespace fw::rl

#include "rl/ppo_controller.hpp"

#include <cmath>

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
  FW_ASSIGN_OR_RETURN(PlantActionLayout layout, plant_action_layout(policy.action_spec()));
  if (!(period_s > 0)) {
    period_s = policy.metadata().value("decision_period_s", 5.0);
    if (!(period_s > 0)) {
      return Status::InvalidArgument("policy metadata.decision_period_s must be > 0");
    }
  }
  const std::string rule = policy.metadata().value("decide_on", std::string("period"));
  DecideOn decide_on = DecideOn::kPeriod;
  if (rule == "phase") {
    decide_on = DecideOn::kPhase;
  } else if (rule != "period") {
    return Status::InvalidArgument("policy metadata.decide_on is '" + rule +
                                   "', expected 'period' or 'phase'");
  }
  const double max_period_s = policy.metadata().value("max_decision_period_s", 60.0);
  if (decide_on == DecideOn::kPhase && !(max_period_s >= period_s)) {
    return Status::InvalidArgument(
        "policy metadata.max_decision_period_s must be >= the decision period");
  }
  return std::unique_ptr<PpoController>(
      new PpoController(std::move(policy), period_s, layout, decide_on, max_period_s));
}

Status PpoController::check_plant(const Policy& policy, const PlantInfo& info) {
  auto layout = plant_action_layout(policy.action_spec());
  const bool caps = layout.ok() && (layout->knob_mask & kPowerCapBit) != 0;
  for (const JobInfo& j : info.jobs) {
    if (caps && !j.gpus.empty()) return Status::Ok();
    for (const KnobRange& r : j.knob_ranges) {
      if (r.available) return Status::Ok();
    }
  }
  const std::string family = policy.metadata().value("scenario_family", std::string("?"));
  return Status::InvalidArgument("policy trained on '" + family +
                                 "' drives gen_concurrency/group_size, but no job of this plant "
                                 "exposes either knob");
}

PpoController::PpoController(Policy policy, double period_s, PlantActionLayout layout,
                             DecideOn decide_on, double max_period_s)
    : policy_(std::move(policy)),
      period_s_(period_s),
      mode_(layout.mode),
      mask_(layout.knob_mask),
      decide_on_(decide_on),
      max_period_s_(max_period_s),
      obs_buf_(kPlantObsDim, 0.0),
      act_buf_(static_cast<size_t>(policy_.action_spec().dim()), 0.0) {}

void PpoController::reset(const PlantInfo& info) {
  cmd_ = blank_command(info);
  last_decision_s_.assign(info.jobs.size(), kUnset);
  decisions_.assign(info.jobs.size(), 0);
}

const Command& PpoController::decide(const Observation& obs) {
  for (auto& k : cmd_.knobs) k = kNoKnobs;
  for (double& c : cmd_.power_cap_w) c = kUnset;
  const PlantInfo& info = *obs.plant;
  for (size_t j = 0; j < info.jobs.size() && j < cmd_.knobs.size(); ++j) {
    bool any = (mask_ & kPowerCapBit) != 0 && !info.jobs[j].gpus.empty();
    for (const KnobRange& r : info.jobs[j].knob_ranges) any |= r.available;
    if (!any) continue;
    if (decide_on_ == DecideOn::kPhase && j < last_decision_s_.size() &&
        !std::isnan(last_decision_s_[j])) {
      // Whole samples since the last decision, compared as PlantEnv counts them.
      const double dt = obs.sample_period_s;
      const int64_t since = std::llround((obs.time_s - last_decision_s_[j]) / dt);
      const int64_t min_n =
          std::max<int64_t>(1, static_cast<int64_t>(std::ceil(period_s_ / dt - 1e-9)));
      const int64_t max_n =
          std::max<int64_t>(min_n, static_cast<int64_t>(std::ceil(max_period_s_ / dt - 1e-9)));
      const bool due = since >= max_n || (since >= min_n && at_phase_boundary(*obs.history, j));
      if (!due) continue;
    }
    if (j < last_decision_s_.size()) {
      last_decision_s_[j] = obs.time_s;
      ++decisions_[j];
    }
    build_plant_features(obs, j, obs_buf_);
    policy_.act(obs_buf_, act_buf_);
    apply_knob_action(info, obs.latest(), j, act_buf_, cmd_, mode_, mask_);
  }
  return cmd_;
}

}  // namespace fw::rl

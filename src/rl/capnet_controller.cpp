#include "rl/capnet_controller.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

ActionSpec cap_action_spec() { return ActionSpec::gaussian({"cap_step"}, {-1.0}, {1.0}); }

Result<std::unique_ptr<CapNetController>> CapNetController::create(Policy policy, double period_s) {
  const ObsSpec want = cap_obs_spec();
  const ObsSpec& got = policy.obs_spec();
  for (int i = 0; i < std::max(want.dim(), got.dim()); ++i) {
    const std::string w = i < want.dim() ? want.names[i] : "(none)";
    const std::string g = i < got.dim() ? got.names[i] : "(none)";
    if (w != g) {
      return Status::InvalidArgument("capnet: observation entry " + std::to_string(i) + " is '" +
                                     g + "', this flexwatt expects '" + w + "'");
    }
  }
  const ActionSpec& a = policy.action_spec();
  if (a.kind != ActionSpec::Kind::kGaussian || a.names != cap_action_spec().names) {
    return Status::InvalidArgument("capnet: the policy's action must be gaussian [cap_step]");
  }
  const nlohmann::json& m = policy.metadata();
  if (period_s <= 0) period_s = m.value("decision_period_s", kCapDefaultPeriodS);
  const double step = m.value("cap_step_frac", kCapDefaultStepFrac);
  if (!(period_s > 0) || !(step > 0 && step <= 1)) {
    return Status::InvalidArgument("capnet: bad decision_period_s or cap_step_frac in metadata");
  }
  return std::unique_ptr<CapNetController>(new CapNetController(std::move(policy), period_s, step));
}

void CapNetController::reset(const PlantInfo& info) {
  state_.reset(info);
  const size_t n = info.gpus.size();
  cmd_.power_cap_w.assign(n, kUnset);
  cmd_.knobs.clear();
  obs_buf_.assign(n * kCapObsDim, 0.0);
  busy_.assign(n, 0);
}

const Command& CapNetController::decide(const Observation& obs) {
  const PlantInfo& info = *obs.plant;
  build_cap_features(obs, period_s_, state_, obs_buf_.data(), busy_.data());
  const Snapshot& now = obs.latest();
  for (size_t g = 0; g < info.gpus.size(); ++g) {
    cmd_.power_cap_w[g] = kUnset;
    if (!busy_[g]) continue;
    double a = 0;
    policy_.act(std::span<const double>(obs_buf_.data() + g * kCapObsDim, kCapObsDim),
                std::span<double>(&a, 1));
    a = std::clamp(std::isfinite(a) ? a : 0.0, -1.0, 1.0);
    const GpuInfo& gi = info.gpus[g];
    const double cap = std::isfinite(now.gpus[g].cap_w) ? now.gpus[g].cap_w : gi.max_cap_w;
    cmd_.power_cap_w[g] = std::clamp(cap + a * step_frac_ * gi.tdp_w, gi.min_cap_w, gi.max_cap_w);
  }
  return cmd_;
}

}  // namespace fw::rl

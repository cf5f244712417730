#include "rl/reward_scaler.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

double RewardScaler::scale(int slot, double reward, bool episode_done) {
  double& g = returns_[slot];
  g = gamma_ * g + reward;
  stats_.update(&g);
  if (episode_done) g = 0.0;
  return std::clamp(reward / std(), -clip_, clip_);
}

double RewardScaler::std() const { return std::sqrt(stats_.var(0) + eps_); }

nlohmann::json RewardScaler::to_json() const {
  return {{"stats", stats_.to_json()},
          {"returns", returns_},
          {"gamma", gamma_},
          {"clip", clip_},
          {"eps", eps_}};
}

Result<RewardScaler> RewardScaler::from_json(const nlohmann::json& j) {
  try {
    FW_ASSIGN_OR_RETURN(RunningMeanStd stats, RunningMeanStd::from_json(j.at("stats")));
    if (stats.dim() != 1) return Status::InvalidArgument("reward_scaler.stats: dim must be 1");
    const auto returns = j.at("returns").get<std::vector<double>>();
    RewardScaler s(static_cast<int>(returns.size()), j.at("gamma").get<double>(),
                   j.at("clip").get<double>(), j.at("eps").get<double>());
    s.stats_ = std::move(stats);
    s.returns_ = returns;
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("reward_scaler: ") + e.what());
  }
}

}  // namespace fw::rl

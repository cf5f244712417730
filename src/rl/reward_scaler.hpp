#pragma once
// Reward scaler (as CleanRL's NormalizeReward + clip 10): keeps, per environment slot, the
// discounted return G = gamma * G + r, tracks its running variance over all slots, and
// returns clip(r / sqrt(var + eps), -clip, clip). Divides only (no mean subtraction);
// G restarts after each episode end. Used in training only: rewards reported to people
// are always the raw ones.

#include <nlohmann/json.hpp>
#include <vector>

#include "core/status.hpp"
#include "rl/running_stats.hpp"

namespace fw::rl {

class RewardScaler {
 public:
  explicit RewardScaler(int num_slots = 1, double gamma = 0.99, double clip = 10.0,
                        double eps = 1e-8)
      : stats_(1), returns_(num_slots, 0.0), gamma_(gamma), clip_(clip), eps_(eps) {}

  // Updates slot's return and the statistics, then returns the scaled reward.
  double scale(int slot, double reward, bool episode_done);
  double std() const;
  const RunningMeanStd& stats() const { return stats_; }

  nlohmann::json to_json() const;
  static Result<RewardScaler> from_json(const nlohmann::json& j);

 private:
  RunningMeanStd stats_;
  std::vector<double> returns_;
  double gamma_, clip_, eps_;
};

}  // namespace fw::rl

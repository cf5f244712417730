#pragma once
// Observation normaliser: out = clip((x - mean) / sqrt(var + eps), -clip, clip) with running
// statistics (as CleanRL's NormalizeObservation + clip 10). The trainer observes every
// observation an environment returns; a deployed policy uses frozen statistics.

#include <nlohmann/json.hpp>

#include "core/status.hpp"
#include "rl/running_stats.hpp"

namespace fw::rl {

class ObsNormalizer {
 public:
  explicit ObsNormalizer(int dim = 0, double clip = 10.0, double eps = 1e-8)
      : stats_(dim), clip_(clip), eps_(eps) {}

  int dim() const { return stats_.dim(); }
  const RunningMeanStd& stats() const { return stats_; }
  double clip() const { return clip_; }

  // Adds x to the statistics (dim() values). No allocation.
  void observe(const double* x) { stats_.update(x); }
  // Writes dim() normalised values; x and out may alias. No allocation.
  void normalize(const double* x, double* out) const;

  nlohmann::json to_json() const;  // {"count","mean","var","clip","eps"}
  static Result<ObsNormalizer> from_json(const nlohmann::json& j);

 private:
  RunningMeanStd stats_;
  double clip_, eps_;
};

}  // namespace fw::rl

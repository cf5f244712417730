#include "rl/obs_normalizer.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

void ObsNormalizer::normalize(const double* x, double* out) const {
  for (int i = 0; i < dim(); ++i) {
    const double z = (x[i] - stats_.mean()[i]) / std::sqrt(stats_.var(i) + eps_);
    out[i] = std::clamp(z, -clip_, clip_);
  }
}

nlohmann::json ObsNormalizer::to_json() const {
  nlohmann::json j = stats_.to_json();
  j["clip"] = clip_;
  j["eps"] = eps_;
  return j;
}

Result<ObsNormalizer> ObsNormalizer::from_json(const nlohmann::json& j) {
  FW_ASSIGN_OR_RETURN(RunningMeanStd stats, RunningMeanStd::from_json(j));
  ObsNormalizer n(stats.dim(), j.value("clip", 10.0), j.value("eps", 1e-8));
  if (!(n.clip_ > 0)) return Status::InvalidArgument("normalizer.clip: must be > 0");
  n.stats_ = std::move(stats);
  return n;
}

}  // namespace fw::rl

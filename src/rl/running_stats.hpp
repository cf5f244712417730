#pragma once
// Running per-entry mean and population variance (Welford), the state behind the
// observation normaliser and the reward scaler. Serialisable so a policy carries the
// exact statistics it was trained with.

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "core/status.hpp"

namespace fw::rl {

class RunningMeanStd {
 public:
  explicit RunningMeanStd(int dim = 0)
      : mean_(Eigen::VectorXd::Zero(dim)), m2_(Eigen::VectorXd::Zero(dim)) {}

  int dim() const { return static_cast<int>(mean_.size()); }
  double count() const { return count_; }
  const Eigen::VectorXd& mean() const { return mean_; }
  // Population variance (divides by count); 1 before any sample, so normalising an
  // untrained statistic is the identity.
  double var(int i) const { return count_ > 0 ? m2_[i] / count_ : 1.0; }
  Eigen::VectorXd var() const;

  // Adds one sample of dim() values. No allocation.
  void update(const double* x);

  nlohmann::json to_json() const;  // {"count", "mean", "var", "m2" (sum of squared deviations)}
  static Result<RunningMeanStd> from_json(const nlohmann::json& j);

 private:
  Eigen::VectorXd mean_, m2_;
  double count_ = 0;
};

}  // namespace fw::rl

#pragma once
// Diagonal Gaussian action distribution with a state-independent log-std parameter.
//
// The network outputs the mean (dim values per sample); log_std (dim values) is a free
// parameter, clamped to [kMinLogStd, kMaxLogStd] when used (gradient zero outside).
// Batched arrays hold samples as columns. Entropy does not depend on the state.

#include <Eigen/Dense>

#include "core/rng.hpp"

namespace fw::rl {

class GaussianHead {
 public:
  static constexpr double kMinLogStd = -5.0;
  static constexpr double kMaxLogStd = 2.0;

  explicit GaussianHead(int dim = 1) : dim_(dim) {}
  int dim() const { return dim_; }

  // Per-sample log-density of `actions` (dim x B) under N(mean, exp(log_std)^2).
  void log_prob(const Eigen::MatrixXd& mean, const double* log_std, const Eigen::MatrixXd& actions,
                Eigen::VectorXd& logp) const;
  // Differential entropy of one sample's distribution (nats).
  double entropy(const double* log_std) const;
  // Gradient of L = sum_i d_logp[i] * logp_i + sum_i d_entropy[i] * H_i:
  // writes dL/dmean into d_mean (dim x B) and adds dL/dlog_std into d_log_std (dim values).
  void backward(const Eigen::MatrixXd& mean, const double* log_std, const Eigen::MatrixXd& actions,
                const Eigen::VectorXd& d_logp, const Eigen::VectorXd& d_entropy,
                Eigen::MatrixXd& d_mean, double* d_log_std) const;

  // One sample, no allocation: action = mean + std * N(0, 1); returns its log-density.
  double sample(const double* mean, const double* log_std, Rng& rng, double* action) const;
  // Deterministic action: the mean.
  void mode(const double* mean, double* action) const;

 private:
  static double clamp_log_std(double v);
  int dim_;
};

}  // namespace fw::rl

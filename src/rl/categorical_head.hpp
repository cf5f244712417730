#pragma once
// Independent categorical factors over one logits vector: factor f owns categories[f]
// consecutive logits and the action entry f holds its chosen index. The joint log-prob and
// entropy are the sums over factors. Log-softmax subtracts the max (stable for any logits).
// Batched arrays hold samples as columns.

#include <Eigen/Dense>
#include <vector>

#include "core/rng.hpp"

namespace fw::rl {

class CategoricalHead {
 public:
  CategoricalHead() = default;
  // REQUIRES: every entry >= 2.
  explicit CategoricalHead(std::vector<int> categories);

  int num_factors() const { return static_cast<int>(categories_.size()); }
  int num_logits() const { return num_logits_; }
  const std::vector<int>& categories() const { return categories_; }

  // logits: num_logits() x B; actions: num_factors() x B (indices stored as doubles).
  void log_prob(const Eigen::MatrixXd& logits, const Eigen::MatrixXd& actions,
                Eigen::VectorXd& logp) const;
  void entropy(const Eigen::MatrixXd& logits, Eigen::VectorXd& entropy) const;
  // dL/dlogits (num_logits() x B) for L = sum_i d_logp[i] logp_i + d_entropy[i] H_i.
  void backward(const Eigen::MatrixXd& logits, const Eigen::MatrixXd& actions,
                const Eigen::VectorXd& d_logp, const Eigen::VectorXd& d_entropy,
                Eigen::MatrixXd& d_logits) const;

  // One sample, no allocation (uses one uniform draw per factor); returns its log-prob.
  double sample(const double* logits, Rng& rng, double* action) const;
  // Deterministic action: the first most likely option of each factor.
  void mode(const double* logits, double* action) const;

 private:
  // log-sum-exp of n logits.
  static double log_sum_exp(const double* z, int n);

  std::vector<int> categories_;
  std::vector<int> offsets_;
  int num_logits_ = 0;
};

}  // namespace fw::rl

#pragma once
// ActionHead: the distribution an actor network's output parameterises, chosen by an
// ActionSpec (Gaussian mean + free log-std, or categorical logits). One interface for the
// trainer and the deployed policy.
//
// `extra` points at the head's own parameters (num_extra_params() values: the Gaussian
// log-std; none for categorical). Batched arrays hold samples as columns.

#include <Eigen/Dense>

#include "core/rng.hpp"
#include "rl/categorical_head.hpp"
#include "rl/gaussian_head.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

class ActionHead {
 public:
  ActionHead() = default;
  // REQUIRES: spec.validate().ok().
  explicit ActionHead(const ActionSpec& spec);

  bool is_gaussian() const { return gaussian_; }
  int net_out_dim() const { return gaussian_ ? gauss_.dim() : cat_.num_logits(); }
  int num_extra_params() const { return gaussian_ ? gauss_.dim() : 0; }
  int action_dim() const { return gaussian_ ? gauss_.dim() : cat_.num_factors(); }

  // Per-sample log-prob and entropy of `actions` (action_dim() x B) given network output
  // `out` (net_out_dim() x B).
  void evaluate(const Eigen::MatrixXd& out, const double* extra, const Eigen::MatrixXd& actions,
                Eigen::VectorXd& logp, Eigen::VectorXd& entropy) const;
  // For L = sum_i d_logp[i] logp_i + d_entropy[i] H_i: writes dL/dout, adds dL/dextra.
  void backward(const Eigen::MatrixXd& out, const double* extra, const Eigen::MatrixXd& actions,
                const Eigen::VectorXd& d_logp, const Eigen::VectorXd& d_entropy,
                Eigen::MatrixXd& d_out, double* d_extra) const;

  // Single sample, no allocation. sample() returns the action's log-prob.
  double sample(const double* out, const double* extra, Rng& rng, double* action) const {
    return gaussian_ ? gauss_.sample(out, extra, rng, action) : cat_.sample(out, rng, action);
  }
  void mode(const double* out, double* action) const {
    gaussian_ ? gauss_.mode(out, action) : cat_.mode(out, action);
  }

 private:
  bool gaussian_ = false;
  GaussianHead gauss_;
  CategoricalHead cat_;
};

}  // namespace fw::rl

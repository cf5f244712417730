#pragma once
// ActorCritic: the trainable model — a separate actor Mlp (obs -> head parameters), the
// head's own parameters (Gaussian log-std) and a critic Mlp (obs -> value) — over one flat
// parameter vector theta = [actor | head extra | critic], so one Adam and one global
// gradient-norm clip cover everything (as CleanRL's single optimiser).
//
// Inputs are *normalised* observations. The class holds shapes only; theta is the caller's.

#include <Eigen/Dense>
#include <vector>

#include "core/rng.hpp"
#include "rl/action_head.hpp"
#include "rl/mlp.hpp"
#include "rl/ppo_loss.hpp"
#include "rl/spec.hpp"

namespace fw::rl {

class ActorCritic {
 public:
  ActorCritic() = default;
  // REQUIRES: obs_dim > 0, action.validate().ok(), every hidden size > 0.
  ActorCritic(int obs_dim, const ActionSpec& action, const std::vector<int>& hidden);

  int num_params() const { return critic_offset_ + critic_.num_params(); }
  const Mlp& actor() const { return actor_; }
  const Mlp& critic() const { return critic_; }
  const ActionHead& head() const { return head_; }
  int extra_offset() const { return actor_.num_params(); }
  int critic_offset() const { return critic_offset_; }
  int obs_dim() const { return actor_.in_dim(); }
  int action_dim() const { return head_.action_dim(); }

  // CleanRL's initialisation: orthogonal, gain sqrt(2) in hidden layers, 0.01 on the
  // policy output, 1.0 on the value output; zero biases; log-std = init_log_std.
  Eigen::VectorXd init(Rng& rng, double init_log_std = 0.0) const;

  // One minibatch: samples as columns.
  struct Batch {
    Eigen::MatrixXd obs;      // obs_dim x B (normalised)
    Eigen::MatrixXd actions;  // action_dim x B
    Eigen::VectorXd logp_old, advantages, returns, values_old;
  };
  // Reusable buffers for loss_and_grad().
  struct Scratch {
    Mlp::Cache actor_cache, critic_cache;
    Eigen::VectorXd logp, entropy, value, d_logp, d_entropy, d_value;
    Eigen::MatrixXd d_out, d_value_mat;
  };
  // PPO loss on the batch and its gradient w.r.t. theta (grad is overwritten).
  PpoLossTerms loss_and_grad(const Eigen::VectorXd& theta, const Batch& batch,
                             const PpoLossConfig& config, Eigen::VectorXd& grad,
                             Scratch& scratch) const;

 private:
  Mlp actor_, critic_;
  ActionHead head_;
  int critic_offset_ = 0;
};

}  // namespace fw::rl

#pragma once
// The PPO loss of one minibatch (Schulman et al. 2017, clipped surrogate), as a function of
// the quantities the networks produce: new log-probs, entropies and values.
//
//   A       = (adv - mean(adv)) / (std(adv) + 1e-8)   if norm_adv (per minibatch), else adv
//   r       = exp(logp_new - logp_old)
//   pg      = mean(max(-A r, -A clip(r, 1 - clip, 1 + clip)))
//   v       = 0.5 mean((V - R)^2), or with clip_vloss
//             0.5 mean(max((V - R)^2, (V_old + clip(V - V_old, -clip, clip) - R)^2))
//   loss    = pg - ent_coef mean(H) + vf_coef v
// and its gradient with respect to logp_new, H and V (the heads and the networks take it
// from there). std is the sample standard deviation (n - 1), as torch.std.

#include <Eigen/Dense>

namespace fw::rl {

struct PpoLossConfig {
  double clip_coef = 0.2;
  bool clip_vloss = true;
  double vf_coef = 0.5;
  double ent_coef = 0.0;
  bool norm_adv = true;
};

struct PpoLossInput {
  const Eigen::VectorXd& logp_old;
  const Eigen::VectorXd& advantages;
  const Eigen::VectorXd& returns;
  const Eigen::VectorXd& values_old;
};

struct PpoLossTerms {
  double loss = 0;
  double pg_loss = 0;
  double v_loss = 0;
  double entropy = 0;    // mean entropy
  double approx_kl = 0;  // mean((r - 1) - log r)
  double clip_frac = 0;  // share of samples with |r - 1| > clip_coef
};

// REQUIRES: all vectors of the same size B >= 2 (norm_adv) or >= 1.
// Writes dloss/dlogp_new, dloss/dentropy and dloss/dvalue (each B values).
PpoLossTerms ppo_loss(const PpoLossConfig& config, const PpoLossInput& in,
                      const Eigen::VectorXd& logp_new, const Eigen::VectorXd& entropy,
                      const Eigen::VectorXd& value_new, Eigen::VectorXd& d_logp,
                      Eigen::VectorXd& d_entropy, Eigen::VectorXd& d_value);

}  // namespace fw::rl

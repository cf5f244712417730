#pragma once
// PPO hyperparameters. Defaults are CleanRL's ppo_continuous_action.py (read from
// vwxyzjn/cleanrl; see docs/rl.md "Defaults and where they come from" and docs/rl.md), except where
// a comment says otherwise.

#include <cstdint>
#include <vector>

#include "rl/adam.hpp"
#include "rl/ppo_loss.hpp"

namespace fw::rl {

struct PpoConfig {
  uint64_t seed = 1;  // fans out to streams ppo.init, ppo.sample, ppo.shuffle, ppo.env
  std::vector<int> hidden{64, 64};  // tanh hidden layers, actor and critic alike
  int num_steps = 2048;             // steps per environment per iteration
  int num_minibatches = 32;         // REQUIRES: divides num_steps * num_envs
  int update_epochs = 10;
  AdamConfig adam{};          // lr 3e-4, eps 1e-5
  int anneal_iterations = 0;  // > 0: lr falls linearly to 0 over this many iterations
  double gamma = 0.99;
  double gae_lambda = 0.95;
  PpoLossConfig loss{};        // clip 0.2, clip_vloss, vf_coef 0.5, ent_coef 0, norm_adv
  double max_grad_norm = 0.5;  // global over actor, log-std and critic
  double target_kl = 0.0;      // > 0: stop the epochs once an epoch's mean KL exceeds it
  bool norm_obs = true;        // running mean/var, clipped to +-obs_clip
  double obs_clip = 10.0;
  bool norm_reward = true;  // divide by running std of the discounted return
  double reward_clip = 10.0;
  double init_log_std = 0.0;  // Gaussian heads only
  // Add gamma * V(final observation) to the last reward of a truncated episode (time
  // limit), so cutting an episode is not mistaken for its end. CleanRL does not do this;
  // our episodes are time windows, so it matters here (a common PPO pitfall).
  bool bootstrap_truncated = true;
};

}  // namespace fw::rl

#pragma once
// RolloutBuffer: num_steps x num_envs transitions of one PPO iteration, and GAE(lambda).
// Transition (t, e) is column/entry t * num_envs + e. dones(t, e) = 1 when the episode
// ended with step t (after the action); the next column for env e then starts a new
// episode. Rewards stored are the ones learned from (scaled, truncation-bootstrapped).

#include <Eigen/Dense>

namespace fw::rl {

struct RolloutBuffer {
  RolloutBuffer() = default;
  RolloutBuffer(int num_steps, int num_envs, int obs_dim, int action_dim);

  int size() const { return num_steps * num_envs; }
  int index(int t, int e) const { return t * num_envs + e; }

  // Generalised advantage estimation (Schulman et al. 2016):
  //   delta_t = r_t + gamma (1 - done_t) V_{t+1} - V_t
  //   A_t     = delta_t + gamma lambda (1 - done_t) A_{t+1}
  //   returns = A + values
  // with V_{T} = last_values[e] (value of the observation after the last step).
  void compute_gae(const Eigen::VectorXd& last_values, double gamma, double lambda);

  int num_steps = 0, num_envs = 0;
  Eigen::MatrixXd obs;      // obs_dim x size(), normalised observations
  Eigen::MatrixXd actions;  // action_dim x size(), raw (unclipped) sampled actions
  Eigen::VectorXd logp, values, rewards, dones, advantages, returns;
};

}  // namespace fw::rl

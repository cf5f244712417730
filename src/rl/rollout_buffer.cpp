#include "rl/rollout_buffer.hpp"

namespace fw::rl {

RolloutBuffer::RolloutBuffer(int steps, int envs, int obs_dim, int action_dim)
    : num_steps(steps),
      num_envs(envs),
      obs(obs_dim, steps * envs),
      actions(action_dim, steps * envs),
      logp(steps * envs),
      values(steps * envs),
      rewards(steps * envs),
      dones(steps * envs),
      advantages(steps * envs),
      returns(steps * envs) {}

void RolloutBuffer::compute_gae(const Eigen::VectorXd& last_values, double gamma, double lambda) {
  for (int e = 0; e < num_envs; ++e) {
    double next_adv = 0.0;
    for (int t = num_steps - 1; t >= 0; --t) {
      const int i = index(t, e);
      const double next_value = (t + 1 < num_steps) ? values[index(t + 1, e)] : last_values[e];
      const double nonterminal = 1.0 - dones[i];
      const double delta = rewards[i] + gamma * nonterminal * next_value - values[i];
      next_adv = delta + gamma * lambda * nonterminal * next_adv;
      advantages[i] = next_adv;
    }
  }
  returns = advantages + values;
}

}  // namespace fw::rl

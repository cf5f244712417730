#include "rl/actor_critic.hpp"

#include <cmath>

namespace fw::rl {

namespace {
std::vector<int> layers(int in, const std::vector<int>& hidden, int out) {
  std::vector<int> v{in};
  v.insert(v.end(), hidden.begin(), hidden.end());
  v.push_back(out);
  return v;
}
}  // namespace

ActorCritic::ActorCritic(int obs_dim, const ActionSpec& action, const std::vector<int>& hidden)
    : head_(action) {
  actor_ = Mlp(layers(obs_dim, hidden, head_.net_out_dim()));
  critic_ = Mlp(layers(obs_dim, hidden, 1));
  critic_offset_ = actor_.num_params() + head_.num_extra_params();
}

Eigen::VectorXd ActorCritic::init(Rng& rng, double init_log_std) const {
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(num_params());
  actor_.init_orthogonal(theta.data(), rng, std::sqrt(2.0), 0.01);
  theta.segment(extra_offset(), head_.num_extra_params()).setConstant(init_log_std);
  critic_.init_orthogonal(theta.data() + critic_offset_, rng, std::sqrt(2.0), 1.0);
  return theta;
}

PpoLossTerms ActorCritic::loss_and_grad(const Eigen::VectorXd& theta, const Batch& batch,
                                        const PpoLossConfig& config, Eigen::VectorXd& grad,
                                        Scratch& s) const {
  grad.setZero(num_params());
  const double* extra = theta.data() + extra_offset();
  actor_.forward(theta.data(), batch.obs, s.actor_cache);
  critic_.forward(theta.data() + critic_offset_, batch.obs, s.critic_cache);
  const Eigen::MatrixXd& out = s.actor_cache.act.back();
  head_.evaluate(out, extra, batch.actions, s.logp, s.entropy);
  s.value = s.critic_cache.act.back().row(0).transpose();

  const PpoLossTerms terms =
      ppo_loss(config, {batch.logp_old, batch.advantages, batch.returns, batch.values_old}, s.logp,
               s.entropy, s.value, s.d_logp, s.d_entropy, s.d_value);

  head_.backward(out, extra, batch.actions, s.d_logp, s.d_entropy, s.d_out,
                 grad.data() + extra_offset());
  actor_.backward(theta.data(), s.actor_cache, s.d_out, grad.data());
  s.d_value_mat = s.d_value.transpose();
  critic_.backward(theta.data() + critic_offset_, s.critic_cache, s.d_value_mat,
                   grad.data() + critic_offset_);
  return terms;
}

}  // namespace fw::rl

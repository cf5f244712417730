#include "rl/ppo_loss.hpp"

#include <gtest/gtest.h>

#include "rl/actor_critic.hpp"
#include "rl/rollout_buffer.hpp"
#include "toy_envs.hpp"

namespace fw::rl {
namespace {

using testing::central_diff;
using testing::rel_err;

struct LossFixture {
  int b = 16;
  Eigen::VectorXd logp_old, adv, ret, v_old, logp, ent, v;
  explicit LossFixture(uint64_t seed) {
    Rng rng(seed);
    auto rnd = [&](double s) {
      Eigen::VectorXd x(b);
      for (int i = 0; i < b; ++i) x[i] = s * rng.normal();
      return x;
    };
    logp_old = rnd(1.0);
    logp = logp_old + rnd(0.3);  // ratios from ~0.4 to ~2.5: both clip sides occur
    adv = rnd(2.0);
    ret = rnd(1.0);
    v_old = rnd(1.0);
    v = v_old + rnd(0.3);  // some beyond the value clip
    ent = rnd(0.5).array().abs();
  }
};

TEST(PpoLoss, GradientsMatchFiniteDifferences) {
  for (bool clip_vloss : {false, true}) {
    for (bool norm_adv : {false, true}) {
      LossFixture f(21);
      PpoLossConfig c{.clip_coef = 0.2,
                      .clip_vloss = clip_vloss,
                      .vf_coef = 0.5,
                      .ent_coef = 0.01,
                      .norm_adv = norm_adv};
      PpoLossInput in{f.logp_old, f.adv, f.ret, f.v_old};
      Eigen::VectorXd dl, de, dv;
      const PpoLossTerms t = ppo_loss(c, in, f.logp, f.ent, f.v, dl, de, dv);
      EXPECT_GT(t.clip_frac, 0.0);
      EXPECT_LT(t.clip_frac, 1.0);
      auto loss = [&] {
        Eigen::VectorXd a, b2, c2;
        return ppo_loss(c, in, f.logp, f.ent, f.v, a, b2, c2).loss;
      };
      for (int i = 0; i < f.b; ++i) {
        EXPECT_LT(rel_err(dl[i], central_diff(loss, f.logp[i])), 1e-6) << i;
        EXPECT_LT(rel_err(de[i], central_diff(loss, f.ent[i])), 1e-6) << i;
        EXPECT_LT(rel_err(dv[i], central_diff(loss, f.v[i])), 1e-6) << i;
      }
    }
  }
}

TEST(PpoLoss, OnPolicyTermsAreNeutral) {
  LossFixture f(22);
  PpoLossConfig c;
  PpoLossInput in{f.logp_old, f.adv, f.ret, f.v_old};
  Eigen::VectorXd dl, de, dv;
  const PpoLossTerms t = ppo_loss(c, in, f.logp_old, f.ent, f.v, dl, de, dv);
  EXPECT_NEAR(t.approx_kl, 0.0, 1e-15);
  EXPECT_EQ(t.clip_frac, 0.0);
  // Normalised advantages have mean 0, so the surrogate is 0 at ratio 1.
  EXPECT_NEAR(t.pg_loss, 0.0, 1e-12);
}

// The full minibatch loss as a function of every parameter (actor, log-std, critic).
void check_actor_critic_gradient(const ActionSpec& spec, uint64_t seed) {
  const int obs_dim = 3, b = 8;
  ActorCritic model(obs_dim, spec, {5, 4});
  Rng rng(seed);
  Eigen::VectorXd theta = model.init(rng, -0.2);
  // Move away from the small-output init so every term matters.
  for (int i = 0; i < theta.size(); ++i) theta[i] += 0.3 * rng.normal();
  ActorCritic::Batch batch;
  batch.obs.resize(obs_dim, b);
  for (int i = 0; i < batch.obs.size(); ++i) batch.obs.data()[i] = rng.normal();
  batch.actions.resize(model.action_dim(), b);
  for (int i = 0; i < b; ++i)
    for (int f = 0; f < model.action_dim(); ++f)
      batch.actions(f, i) = spec.kind == ActionSpec::Kind::kGaussian
                                ? rng.normal()
                                : static_cast<double>(rng.below(spec.categories[f]));
  batch.logp_old.resize(b);
  batch.advantages.resize(b);
  batch.returns.resize(b);
  batch.values_old.resize(b);
  {  // logp_old near the current log-probs, so some ratios clip and some do not
    Mlp::Cache cache;
    model.actor().forward(theta.data(), batch.obs, cache);
    Eigen::VectorXd logp, ent;
    model.head().evaluate(cache.act.back(), theta.data() + model.extra_offset(), batch.actions,
                          logp, ent);
    for (int i = 0; i < b; ++i) {
      batch.logp_old[i] = logp[i] + 0.3 * rng.normal();
      batch.advantages[i] = rng.normal();
      batch.returns[i] = rng.normal();
      batch.values_old[i] = rng.normal();
    }
  }
  PpoLossConfig c{
      .clip_coef = 0.2, .clip_vloss = true, .vf_coef = 0.5, .ent_coef = 0.05, .norm_adv = true};
  ActorCritic::Scratch scratch;
  Eigen::VectorXd grad;
  model.loss_and_grad(theta, batch, c, grad, scratch);
  auto loss = [&] {
    Eigen::VectorXd g;
    ActorCritic::Scratch s;
    return model.loss_and_grad(theta, batch, c, g, s).loss;
  };
  double worst = 0;
  int worst_i = -1;
  for (int i = 0; i < theta.size(); ++i) {
    const double e = rel_err(grad[i], central_diff(loss, theta[i]));
    if (e > worst) worst = e, worst_i = i;
  }
  EXPECT_LT(worst, 1e-6) << "parameter " << worst_i << " of " << theta.size();
  // Every block receives gradient.
  EXPECT_GT(grad.head(model.actor().num_params()).norm(), 0.0);
  EXPECT_GT(grad.tail(model.critic().num_params()).norm(), 0.0);
}

TEST(ActorCritic, GaussianLossGradientMatchesFiniteDifferences) {
  check_actor_critic_gradient(ActionSpec::gaussian({"a", "b"}, {-1, -1}, {1, 1}), 31);
}

TEST(ActorCritic, CategoricalLossGradientMatchesFiniteDifferences) {
  check_actor_critic_gradient(ActionSpec::categorical({"a", "b"}, {3, 3}), 32);
}

TEST(RolloutBuffer, GaeMatchesHandComputation) {
  // One env, 3 steps, episode ends after step 1.
  RolloutBuffer buf(3, 1, 1, 1);
  buf.rewards << 1.0, 2.0, 3.0;
  buf.values << 0.5, 0.25, 1.0;
  buf.dones << 0.0, 1.0, 0.0;
  const double g = 0.9, l = 0.8;
  Eigen::VectorXd last(1);
  last << 2.0;
  buf.compute_gae(last, g, l);
  const double d2 = 3.0 + g * 2.0 - 1.0;
  const double d1 = 2.0 - 0.25;  // terminal: no bootstrap
  const double d0 = 1.0 + g * 0.25 - 0.5;
  EXPECT_NEAR(buf.advantages[2], d2, 1e-12);
  EXPECT_NEAR(buf.advantages[1], d1, 1e-12);
  EXPECT_NEAR(buf.advantages[0], d0 + g * l * d1, 1e-12);
  EXPECT_NEAR(buf.returns[0], buf.advantages[0] + 0.5, 1e-12);
}

TEST(RolloutBuffer, GaeKeepsEnvironmentsApart) {
  RolloutBuffer buf(2, 2, 1, 1);  // index t * 2 + e
  buf.rewards << 1.0, 10.0, 1.0, 10.0;
  buf.values.setZero();
  buf.dones.setZero();
  Eigen::VectorXd last(2);
  last << 0.0, 0.0;
  buf.compute_gae(last, 1.0, 1.0);
  EXPECT_NEAR(buf.advantages[0], 2.0, 1e-12);
  EXPECT_NEAR(buf.advantages[1], 20.0, 1e-12);
}

}  // namespace
}  // namespace fw::rl

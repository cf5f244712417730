#include "rl/ppo_loss.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

PpoLossTerms ppo_loss(const PpoLossConfig& c, const PpoLossInput& in,
                      const Eigen::VectorXd& logp_new, const Eigen::VectorXd& entropy,
                      const Eigen::VectorXd& value_new, Eigen::VectorXd& d_logp,
                      Eigen::VectorXd& d_entropy, Eigen::VectorXd& d_value) {
  const Eigen::Index b = logp_new.size();
  const double inv_b = 1.0 / static_cast<double>(b);
  double adv_mean = 0, adv_scale = 1;
  if (c.norm_adv && b > 1) {
    adv_mean = in.advantages.mean();
    const double var =
        (in.advantages.array() - adv_mean).square().sum() / static_cast<double>(b - 1);
    adv_scale = 1.0 / (std::sqrt(var) + 1e-8);
  }
  d_logp.resize(b);
  d_value.resize(b);
  d_entropy.setConstant(b, -c.ent_coef * inv_b);

  PpoLossTerms t;
  for (Eigen::Index i = 0; i < b; ++i) {
    const double a = (in.advantages[i] - adv_mean) * adv_scale;
    const double log_ratio = logp_new[i] - in.logp_old[i];
    const double r = std::exp(log_ratio);
    const double r_clipped = std::clamp(r, 1.0 - c.clip_coef, 1.0 + c.clip_coef);
    const double unclipped = -a * r, clipped = -a * r_clipped;
    // The max picks the unclipped branch (gradient -A r) or the clipped constant (0).
    if (unclipped >= clipped) {
      t.pg_loss += unclipped;
      d_logp[i] = -a * r * inv_b;
    } else {
      t.pg_loss += clipped;
      d_logp[i] = 0.0;
    }
    t.approx_kl += (r - 1.0) - log_ratio;
    if (std::abs(r - 1.0) > c.clip_coef) t.clip_frac += 1.0;

    const double v = value_new[i], ret = in.returns[i];
    const double err = v - ret;
    double g_v = err;
    double sq = err * err;
    if (c.clip_vloss) {
      const double dv = v - in.values_old[i];
      const double dv_clipped = std::clamp(dv, -c.clip_coef, c.clip_coef);
      const double err_c = in.values_old[i] + dv_clipped - ret;
      if (err_c * err_c > sq) {
        sq = err_c * err_c;
        g_v = (dv == dv_clipped) ? err_c : 0.0;
      }
    }
    t.v_loss += 0.5 * sq;
    d_value[i] = c.vf_coef * g_v * inv_b;
  }
  t.pg_loss *= inv_b;
  t.v_loss *= inv_b;
  t.entropy = entropy.mean();
  t.approx_kl *= inv_b;
  t.clip_frac *= inv_b;
  t.loss = t.pg_loss - c.ent_coef * t.entropy + c.vf_coef * t.v_loss;
  return t;
}

}  // namespace fw::rl

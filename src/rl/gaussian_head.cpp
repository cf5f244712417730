#include "rl/gaussian_head.hpp"

#include <algorithm>
#include <cmath>

namespace fw::rl {

namespace {
constexpr double kHalfLog2Pi = 0.91893853320467274178;  // 0.5 * log(2 pi)
}

double GaussianHead::clamp_log_std(double v) { return std::clamp(v, kMinLogStd, kMaxLogStd); }

void GaussianHead::log_prob(const Eigen::MatrixXd& mean, const double* log_std,
                            const Eigen::MatrixXd& actions, Eigen::VectorXd& logp) const {
  const Eigen::Index b = mean.cols();
  logp.setZero(b);
  for (int j = 0; j < dim_; ++j) {
    const double ls = clamp_log_std(log_std[j]);
    const double inv_std = std::exp(-ls);
    for (Eigen::Index i = 0; i < b; ++i) {
      const double z = (actions(j, i) - mean(j, i)) * inv_std;
      logp[i] += -0.5 * z * z - ls - kHalfLog2Pi;
    }
  }
}

double GaussianHead::entropy(const double* log_std) const {
  double h = 0;
  for (int j = 0; j < dim_; ++j) h += 0.5 + kHalfLog2Pi + clamp_log_std(log_std[j]);
  return h;
}

void GaussianHead::backward(const Eigen::MatrixXd& mean, const double* log_std,
                            const Eigen::MatrixXd& actions, const Eigen::VectorXd& d_logp,
                            const Eigen::VectorXd& d_entropy, Eigen::MatrixXd& d_mean,
                            double* d_log_std) const {
  const Eigen::Index b = mean.cols();
  d_mean.resize(dim_, b);
  const double sum_d_entropy = d_entropy.sum();
  for (int j = 0; j < dim_; ++j) {
    const double ls = clamp_log_std(log_std[j]);
    const bool inside = log_std[j] > kMinLogStd && log_std[j] < kMaxLogStd;
    const double inv_var = std::exp(-2.0 * ls);
    double g_ls = sum_d_entropy;  // dH/dlog_std = 1
    for (Eigen::Index i = 0; i < b; ++i) {
      const double diff = actions(j, i) - mean(j, i);
      d_mean(j, i) = d_logp[i] * diff * inv_var;          // dlogp/dmean = (a - mu) / var
      g_ls += d_logp[i] * (diff * diff * inv_var - 1.0);  // dlogp/dlog_std = z^2 - 1
    }
    if (inside) d_log_std[j] += g_ls;
  }
}

double GaussianHead::sample(const double* mean, const double* log_std, Rng& rng,
                            double* action) const {
  double logp = 0;
  for (int j = 0; j < dim_; ++j) {
    const double ls = clamp_log_std(log_std[j]);
    const double eps = rng.normal();
    action[j] = mean[j] + std::exp(ls) * eps;
    logp += -0.5 * eps * eps - ls - kHalfLog2Pi;
  }
  return logp;
}

void GaussianHead::mode(const double* mean, double* action) const {
  std::copy(mean, mean + dim_, action);
}

}  // namespace fw::rl

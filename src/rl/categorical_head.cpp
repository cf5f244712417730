#include "rl/categorical_head.hpp"

#include <cassert>
#include <cmath>

namespace fw::rl {

CategoricalHead::CategoricalHead(std::vector<int> categories) : categories_(std::move(categories)) {
  for (int k : categories_) {
    assert(k >= 2);
    offsets_.push_back(num_logits_);
    num_logits_ += k;
  }
}

double CategoricalHead::log_sum_exp(const double* z, int n) {
  double m = z[0];
  for (int k = 1; k < n; ++k) m = std::max(m, z[k]);
  double s = 0;
  for (int k = 0; k < n; ++k) s += std::exp(z[k] - m);
  return m + std::log(s);
}

void CategoricalHead::log_prob(const Eigen::MatrixXd& logits, const Eigen::MatrixXd& actions,
                               Eigen::VectorXd& logp) const {
  const Eigen::Index b = logits.cols();
  logp.setZero(b);
  for (Eigen::Index i = 0; i < b; ++i) {
    const double* z = logits.col(i).data();
    for (int f = 0; f < num_factors(); ++f) {
      const double* zf = z + offsets_[f];
      const int a = static_cast<int>(actions(f, i));
      logp[i] += zf[a] - log_sum_exp(zf, categories_[f]);
    }
  }
}

void CategoricalHead::entropy(const Eigen::MatrixXd& logits, Eigen::VectorXd& entropy) const {
  const Eigen::Index b = logits.cols();
  entropy.setZero(b);
  for (Eigen::Index i = 0; i < b; ++i) {
    const double* z = logits.col(i).data();
    for (int f = 0; f < num_factors(); ++f) {
      const double* zf = z + offsets_[f];
      const double lse = log_sum_exp(zf, categories_[f]);
      for (int k = 0; k < categories_[f]; ++k) {
        const double lp = zf[k] - lse;
        entropy[i] -= std::exp(lp) * lp;
      }
    }
  }
}

void CategoricalHead::backward(const Eigen::MatrixXd& logits, const Eigen::MatrixXd& actions,
                               const Eigen::VectorXd& d_logp, const Eigen::VectorXd& d_entropy,
                               Eigen::MatrixXd& d_logits) const {
  const Eigen::Index b = logits.cols();
  d_logits.resize(num_logits_, b);
  for (Eigen::Index i = 0; i < b; ++i) {
    const double* z = logits.col(i).data();
    double* g = d_logits.col(i).data();
    for (int f = 0; f < num_factors(); ++f) {
      const double* zf = z + offsets_[f];
      double* gf = g + offsets_[f];
      const int n = categories_[f];
      const int a = static_cast<int>(actions(f, i));
      const double lse = log_sum_exp(zf, n);
      double h = 0;
      for (int k = 0; k < n; ++k) {
        const double lp = zf[k] - lse;
        h -= std::exp(lp) * lp;
      }
      for (int k = 0; k < n; ++k) {
        const double lp = zf[k] - lse;
        const double p = std::exp(lp);
        // dlogp(a)/dz_k = [k == a] - p_k;  dH/dz_k = -p_k (log p_k + H)
        gf[k] = d_logp[i] * ((k == a ? 1.0 : 0.0) - p) - d_entropy[i] * p * (lp + h);
      }
    }
  }
}

double CategoricalHead::sample(const double* logits, Rng& rng, double* action) const {
  double logp = 0;
  for (int f = 0; f < num_factors(); ++f) {
    const double* zf = logits + offsets_[f];
    const int n = categories_[f];
    const double lse = log_sum_exp(zf, n);
    const double u = rng.uniform();
    double cum = 0;
    int chosen = n - 1;  // guards against rounding leaving cum slightly below u
    for (int k = 0; k < n; ++k) {
      cum += std::exp(zf[k] - lse);
      if (u < cum) {
        chosen = k;
        break;
      }
    }
    action[f] = chosen;
    logp += zf[chosen] - lse;
  }
  return logp;
}

void CategoricalHead::mode(const double* logits, double* action) const {
  for (int f = 0; f < num_factors(); ++f) {
    const double* zf = logits + offsets_[f];
    int best = 0;
    for (int k = 1; k < categories_[f]; ++k)
      if (zf[k] > zf[best]) best = k;
    action[f] = best;
  }
}

}  // namespace fw::rl

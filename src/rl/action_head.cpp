#include "rl/action_head.hpp"

namespace fw::rl {

ActionHead::ActionHead(const ActionSpec& spec)
    : gaussian_(spec.kind == ActionSpec::Kind::kGaussian),
      gauss_(spec.kind == ActionSpec::Kind::kGaussian ? spec.dim() : 1),
      cat_(spec.kind == ActionSpec::Kind::kCategorical ? CategoricalHead(spec.categories)
                                                       : CategoricalHead()) {}

void ActionHead::evaluate(const Eigen::MatrixXd& out, const double* extra,
                          const Eigen::MatrixXd& actions, Eigen::VectorXd& logp,
                          Eigen::VectorXd& entropy) const {
  if (gaussian_) {
    gauss_.log_prob(out, extra, actions, logp);
    entropy.setConstant(out.cols(), gauss_.entropy(extra));
  } else {
    cat_.log_prob(out, actions, logp);
    cat_.entropy(out, entropy);
  }
}

void ActionHead::backward(const Eigen::MatrixXd& out, const double* extra,
                          const Eigen::MatrixXd& actions, const Eigen::VectorXd& d_logp,
                          const Eigen::VectorXd& d_entropy, Eigen::MatrixXd& d_out,
                          double* d_extra) const {
  if (gaussian_) {
    gauss_.backward(out, extra, actions, d_logp, d_entropy, d_out, d_extra);
  } else {
    cat_.backward(out, actions, d_logp, d_entropy, d_out);
  }
}

}  // namespace fw::rl

#include "rl/adam.hpp"

#include <cmath>
#include <vector>

namespace fw::rl {

Adam::Adam(int num_params, AdamConfig config)
    : config_(config),
      m_(Eigen::VectorXd::Zero(num_params)),
      v_(Eigen::VectorXd::Zero(num_params)) {}

void Adam::step(Eigen::VectorXd& theta, const Eigen::VectorXd& grad) {
  ++t_;
  m_ = config_.beta1 * m_ + (1.0 - config_.beta1) * grad;
  v_ = config_.beta2 * v_ + (1.0 - config_.beta2) * grad.cwiseProduct(grad);
  const double c1 = 1.0 - std::pow(config_.beta1, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(config_.beta2, static_cast<double>(t_));
  // Same arithmetic as PyTorch: lr/c1 * m / (sqrt(v)/sqrt(c2) + eps).
  const double step_size = config_.lr / c1;
  const double sqrt_c2 = std::sqrt(c2);
  theta.array() -= step_size * m_.array() / (v_.array().sqrt() / sqrt_c2 + config_.eps);
}

nlohmann::json Adam::to_json() const {
  return {{"lr", config_.lr},
          {"beta1", config_.beta1},
          {"beta2", config_.beta2},
          {"eps", config_.eps},
          {"t", t_},
          {"m", std::vector<double>(m_.data(), m_.data() + m_.size())},
          {"v", std::vector<double>(v_.data(), v_.data() + v_.size())}};
}

Result<Adam> Adam::from_json(const nlohmann::json& j) {
  try {
    AdamConfig c{j.at("lr").get<double>(), j.at("beta1").get<double>(), j.at("beta2").get<double>(),
                 j.at("eps").get<double>()};
    const auto m = j.at("m").get<std::vector<double>>();
    const auto v = j.at("v").get<std::vector<double>>();
    if (m.size() != v.size()) return Status::InvalidArgument("adam: m and v sizes differ");
    Adam a(static_cast<int>(m.size()), c);
    a.t_ = j.at("t").get<long>();
    a.m_ = Eigen::Map<const Eigen::VectorXd>(m.data(), m.size());
    a.v_ = Eigen::Map<const Eigen::VectorXd>(v.data(), v.size());
    return a;
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(std::string("adam: ") + e.what());
  }
}

double clip_grad_norm(Eigen::VectorXd& grad, double max_norm) {
  const double norm = grad.norm();
  if (max_norm > 0 && norm > max_norm) grad *= max_norm / (norm + 1e-6);
  return norm;
}

}  // namespace fw::rl

#pragma once
// Adam (Kingma & Ba 2015) with bias correction, over one flat parameter vector.
// Defaults follow CleanRL's PPO (lr 3e-4, eps 1e-5; see docs/rl.md).
// The learning rate may change between steps (annealing); state is serialisable so
// training can resume exactly.

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "core/status.hpp"

namespace fw::rl {

struct AdamConfig {
  double lr = 3e-4;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-5;
};

class Adam {
 public:
  Adam() = default;
  Adam(int num_params, AdamConfig config);

  // theta -= lr * m_hat / (sqrt(v_hat) + eps). REQUIRES: sizes == num_params.
  void step(Eigen::VectorXd& theta, const Eigen::VectorXd& grad);

  void set_lr(double lr) { config_.lr = lr; }
  const AdamConfig& config() const { return config_; }
  long steps() const { return t_; }

  nlohmann::json to_json() const;
  static Result<Adam> from_json(const nlohmann::json& j);

 private:
  AdamConfig config_;
  Eigen::VectorXd m_, v_;
  long t_ = 0;
};

// Scales grad so its L2 norm is at most max_norm (no-op when max_norm <= 0);
// returns the norm before clipping.
double clip_grad_norm(Eigen::VectorXd& grad, double max_norm);

}  // namespace fw::rl

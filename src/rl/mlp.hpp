#pragma once
// Mlp: a fully connected network with tanh hidden layers and a linear output layer.
//
// The Mlp holds only the shape; parameters live in a caller-owned flat array (`theta`),
// so an optimiser sees one vector and actor, log-std and critic can share one array.
// Layout of theta, layer by layer: W (n_out x n_in, column-major) then b (n_out).
// Batched calls take samples as columns (n_in x batch). forward_one() is the
// allocation-free single-sample path used for acting and deployed inference.
// Thread-safety: const methods are safe; caches and workspaces are per caller.

#include <Eigen/Dense>
#include <vector>

#include "core/rng.hpp"

namespace fw::rl {

class Mlp {
 public:
  Mlp() = default;
  // layer_sizes = {in, hidden..., out}; REQUIRES: at least 2 entries, all > 0.
  explicit Mlp(std::vector<int> layer_sizes);

  int in_dim() const { return sizes_.front(); }
  int out_dim() const { return sizes_.back(); }
  int num_params() const { return num_params_; }
  int num_layers() const { return static_cast<int>(sizes_.size()) - 1; }
  const std::vector<int>& layer_sizes() const { return sizes_; }

  // Orthogonal weights (QR of a Gaussian matrix), scaled by hidden_gain for hidden layers
  // and output_gain for the last; zero biases. Writes num_params() values at theta.
  void init_orthogonal(double* theta, Rng& rng, double hidden_gain, double output_gain) const;

  // Activations of one batched forward pass, kept for backward().
  struct Cache {
    std::vector<Eigen::MatrixXd> act;  // act[0] = input, act[l] = layer l output
    std::vector<Eigen::MatrixXd> delta;
  };
  // Output: cache.act.back() (out_dim x batch).
  void forward(const double* theta, const Eigen::MatrixXd& x, Cache& cache) const;
  // Adds dL/dtheta into grad (num_params() values) given d_out = dL/d(output) from the
  // last forward() with this cache; writes dL/dx into *d_x when d_x is not null.
  void backward(const double* theta, Cache& cache, const Eigen::MatrixXd& d_out, double* grad,
                Eigen::MatrixXd* d_x = nullptr) const;

  // Buffers for forward_one(); make one per caller, reuse it for every call.
  struct Workspace {
    std::vector<Eigen::VectorXd> h;
  };
  Workspace make_workspace() const;
  // Single sample, no allocation: x has in_dim() values, out receives out_dim() values.
  void forward_one(const double* theta, const double* x, Workspace& ws, double* out) const;

 private:
  int weight_offset(int layer) const { return offsets_[layer]; }
  int bias_offset(int layer) const { return offsets_[layer] + sizes_[layer + 1] * sizes_[layer]; }

  std::vector<int> sizes_{1, 1};
  std::vector<int> offsets_{0};
  int num_params_ = 2;
};

}  // namespace fw::rl

#include "rl/mlp.hpp"

#include <cassert>
#include <utility>

namespace fw::rl {

using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;

Mlp::Mlp(std::vector<int> layer_sizes) : sizes_(std::move(layer_sizes)) {
  assert(sizes_.size() >= 2);
  offsets_.clear();
  num_params_ = 0;
  for (size_t l = 0; l + 1 < sizes_.size(); ++l) {
    assert(sizes_[l] > 0 && sizes_[l + 1] > 0);
    offsets_.push_back(num_params_);
    num_params_ += sizes_[l + 1] * sizes_[l] + sizes_[l + 1];
  }
}

void Mlp::init_orthogonal(double* theta, Rng& rng, double hidden_gain, double output_gain) const {
  for (int l = 0; l < num_layers(); ++l) {
    const int rows = sizes_[l + 1], cols = sizes_[l];
    const double gain = (l + 1 == num_layers()) ? output_gain : hidden_gain;
    // Orthonormal rows or columns, whichever is fewer, from the QR of a Gaussian matrix
    // with the sign of R's diagonal folded in (a uniform draw over orthogonal matrices).
    const int big = std::max(rows, cols), small = std::min(rows, cols);
    MatrixXd g(big, small);
    for (int j = 0; j < small; ++j)
      for (int i = 0; i < big; ++i) g(i, j) = rng.normal();
    Eigen::HouseholderQR<MatrixXd> qr(g);
    MatrixXd q = qr.householderQ() * MatrixXd::Identity(big, small);
    const MatrixXd r = qr.matrixQR().topRows(small).template triangularView<Eigen::Upper>();
    for (int j = 0; j < small; ++j)
      if (r(j, j) < 0) q.col(j) = -q.col(j);
    Map<MatrixXd> w(theta + weight_offset(l), rows, cols);
    if (rows >= cols) {
      w = gain * q;
    } else {
      w = gain * q.transpose();
    }
    Map<VectorXd>(theta + bias_offset(l), rows).setZero();
  }
}

void Mlp::forward(const double* theta, const MatrixXd& x, Cache& cache) const {
  assert(x.rows() == in_dim());
  const int n = num_layers();
  cache.act.resize(n + 1);
  cache.act[0] = x;
  for (int l = 0; l < n; ++l) {
    Map<const MatrixXd> w(theta + weight_offset(l), sizes_[l + 1], sizes_[l]);
    Map<const VectorXd> b(theta + bias_offset(l), sizes_[l + 1]);
    MatrixXd& out = cache.act[l + 1];
    out.resize(sizes_[l + 1], x.cols());
    out.noalias() = w * cache.act[l];
    out.colwise() += b;
    if (l + 1 < n) out = out.array().tanh();
  }
}

void Mlp::backward(const double* theta, Cache& cache, const MatrixXd& d_out, double* grad,
                   MatrixXd* d_x) const {
  const int n = num_layers();
  assert(static_cast<int>(cache.act.size()) == n + 1);
  cache.delta.resize(n + 1);
  cache.delta[n] = d_out;  // dL/d(pre-activation) of the linear output layer
  for (int l = n - 1; l >= 0; --l) {
    Map<const MatrixXd> w(theta + weight_offset(l), sizes_[l + 1], sizes_[l]);
    Map<MatrixXd> gw(grad + weight_offset(l), sizes_[l + 1], sizes_[l]);
    Map<VectorXd> gb(grad + bias_offset(l), sizes_[l + 1]);
    const MatrixXd& delta = cache.delta[l + 1];
    gw.noalias() += delta * cache.act[l].transpose();
    gb.noalias() += delta.rowwise().sum();
    if (l == 0 && d_x == nullptr) break;
    MatrixXd& d_in = cache.delta[l];
    d_in.resize(sizes_[l], delta.cols());
    d_in.noalias() = w.transpose() * delta;
    if (l > 0) {  // through tanh: d/dz tanh(z) = 1 - tanh(z)^2
      d_in.array() *= 1.0 - cache.act[l].array().square();
    }
  }
  if (d_x != nullptr) *d_x = cache.delta[0];
}

Mlp::Workspace Mlp::make_workspace() const {
  Workspace ws;
  for (int l = 1; l < static_cast<int>(sizes_.size()); ++l) ws.h.emplace_back(sizes_[l]);
  return ws;
}

void Mlp::forward_one(const double* theta, const double* x, Workspace& ws, double* out) const {
  const int n = num_layers();
  for (int l = 0; l < n; ++l) {
    Map<const MatrixXd> w(theta + weight_offset(l), sizes_[l + 1], sizes_[l]);
    Map<const VectorXd> b(theta + bias_offset(l), sizes_[l + 1]);
    const double* in = (l == 0) ? x : ws.h[l - 1].data();
    VectorXd& h = ws.h[l];
    h.noalias() = w * Map<const VectorXd>(in, sizes_[l]);
    h += b;
    if (l + 1 < n) h = h.array().tanh();
  }
  Map<VectorXd>(out, out_dim()) = ws.h[n - 1];
}

}  // namespace fw::rl

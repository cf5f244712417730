#include "rl/mlp.hpp"

#include <gtest/gtest.h>

#include "toy_envs.hpp"

namespace fw::rl {
namespace {

using testing::central_diff;
using testing::rel_err;

// Scalar loss L = sum(C .* out) for a fixed random C, so dL/dout = C.
struct MlpFixture {
  Mlp mlp{{3, 5, 4, 2}};
  Eigen::VectorXd theta;
  Eigen::MatrixXd x, c;
  MlpFixture() {
    Rng rng(7);
    theta.resize(mlp.num_params());
    mlp.init_orthogonal(theta.data(), rng, std::sqrt(2.0), 1.0);
    // Non-zero biases so their gradients are exercised away from the init.
    for (int i = 0; i < theta.size(); ++i) theta[i] += 0.1 * rng.normal();
    x = Eigen::MatrixXd(3, 4);
    c = Eigen::MatrixXd(2, 4);
    for (int i = 0; i < x.size(); ++i) x.data()[i] = rng.normal();
    for (int i = 0; i < c.size(); ++i) c.data()[i] = rng.normal();
  }
  double loss() {
    Mlp::Cache cache;
    mlp.forward(theta.data(), x, cache);
    return (cache.act.back().array() * c.array()).sum();
  }
};

TEST(Mlp, ParamCountAndLayout) {
  Mlp m({3, 5, 4, 2});
  EXPECT_EQ(m.num_params(), 3 * 5 + 5 + 5 * 4 + 4 + 4 * 2 + 2);
  EXPECT_EQ(m.in_dim(), 3);
  EXPECT_EQ(m.out_dim(), 2);
}

TEST(Mlp, ParamGradientMatchesFiniteDifferences) {
  MlpFixture f;
  Mlp::Cache cache;
  f.mlp.forward(f.theta.data(), f.x, cache);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(f.mlp.num_params());
  f.mlp.backward(f.theta.data(), cache, f.c, grad.data());
  double worst = 0;
  for (int i = 0; i < f.theta.size(); ++i) {
    const double fd = central_diff([&] { return f.loss(); }, f.theta[i]);
    worst = std::max(worst, rel_err(grad[i], fd));
  }
  EXPECT_LT(worst, 1e-6);
}

TEST(Mlp, InputGradientMatchesFiniteDifferences) {
  MlpFixture f;
  Mlp::Cache cache;
  f.mlp.forward(f.theta.data(), f.x, cache);
  Eigen::VectorXd grad = Eigen::VectorXd::Zero(f.mlp.num_params());
  Eigen::MatrixXd d_x;
  f.mlp.backward(f.theta.data(), cache, f.c, grad.data(), &d_x);
  ASSERT_EQ(d_x.rows(), 3);
  ASSERT_EQ(d_x.cols(), 4);
  for (int i = 0; i < f.x.size(); ++i) {
    const double fd = central_diff([&] { return f.loss(); }, f.x.data()[i]);
    EXPECT_LT(rel_err(d_x.data()[i], fd), 1e-6) << "input entry " << i;
  }
}

TEST(Mlp, BackwardAccumulates) {
  MlpFixture f;
  Mlp::Cache cache;
  f.mlp.forward(f.theta.data(), f.x, cache);
  Eigen::VectorXd once = Eigen::VectorXd::Zero(f.mlp.num_params());
  f.mlp.backward(f.theta.data(), cache, f.c, once.data());
  Eigen::VectorXd twice = once;
  f.mlp.backward(f.theta.data(), cache, f.c, twice.data());
  EXPECT_LT((twice - 2 * once).norm(), 1e-12 * once.norm());
}

TEST(Mlp, ForwardOneMatchesBatch) {
  MlpFixture f;
  Mlp::Cache cache;
  f.mlp.forward(f.theta.data(), f.x, cache);
  auto ws = f.mlp.make_workspace();
  double out[2];
  for (int j = 0; j < f.x.cols(); ++j) {
    f.mlp.forward_one(f.theta.data(), f.x.col(j).data(), ws, out);
    EXPECT_NEAR(out[0], cache.act.back()(0, j), 1e-12);
    EXPECT_NEAR(out[1], cache.act.back()(1, j), 1e-12);
  }
}

TEST(Mlp, OrthogonalInitHasOrthonormalRowsOrColumnsTimesGain) {
  Mlp m({6, 4, 8});
  Eigen::VectorXd theta(m.num_params());
  Rng rng(3);
  m.init_orthogonal(theta.data(), rng, 2.0, 0.5);
  // Layer 0: 4 x 6 (rows orthonormal), gain 2. Layer 1: 8 x 4 (columns orthonormal), 0.5.
  Eigen::Map<Eigen::MatrixXd> w0(theta.data(), 4, 6);
  Eigen::Map<Eigen::MatrixXd> w1(theta.data() + 4 * 6 + 4, 8, 4);
  EXPECT_LT((w0 * w0.transpose() - 4.0 * Eigen::MatrixXd::Identity(4, 4)).norm(), 1e-12);
  EXPECT_LT((w1.transpose() * w1 - 0.25 * Eigen::MatrixXd::Identity(4, 4)).norm(), 1e-12);
  EXPECT_EQ(theta.segment(4 * 6, 4).norm(), 0.0);  // biases
  // Seeded: same seed, same weights; another seed, other weights.
  Eigen::VectorXd again(m.num_params()), other(m.num_params());
  Rng r1(3), r2(4);
  m.init_orthogonal(again.data(), r1, 2.0, 0.5);
  m.init_orthogonal(other.data(), r2, 2.0, 0.5);
  EXPECT_EQ(theta, again);
  EXPECT_NE(theta, other);
}

}  // namespace
}  // namespace fw::rl

#include "rl/adam.hpp"

#include <gtest/gtest.h>

namespace fw::rl {
namespace {

TEST(Adam, MinimisesAQuadratic) {
  // f(x) = 0.5 sum_i a_i (x_i - c_i)^2 with curvatures spanning 3 decades.
  Eigen::VectorXd a(3), c(3), x = Eigen::VectorXd::Zero(3);
  a << 1.0, 10.0, 1000.0;
  c << 1.0, -2.0, 0.5;
  Adam opt(3, {.lr = 0.05, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8});
  for (int k = 0; k < 2000; ++k) {
    const Eigen::VectorXd g = a.cwiseProduct(x - c);
    opt.step(x, g);
  }
  EXPECT_LT((x - c).norm(), 1e-3);
  EXPECT_EQ(opt.steps(), 2000);
}

TEST(Adam, FirstStepHasSizeLrThanksToBiasCorrection) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(2), g(2);
  g << 3.0, -1e-3;
  Adam opt(2, {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-12});
  opt.step(x, g);
  EXPECT_NEAR(x[0], -0.1, 1e-9);
  EXPECT_NEAR(x[1], 0.1, 1e-6);
}

TEST(Adam, JsonRoundTripContinuesIdentically) {
  Eigen::VectorXd x1 = Eigen::VectorXd::Constant(2, 1.0), g(2);
  g << 0.5, -0.25;
  Adam a(2, {});
  a.step(x1, g);
  auto restored = Adam::from_json(a.to_json());
  ASSERT_TRUE(restored.ok()) << restored.status().message();
  Eigen::VectorXd x2 = x1;
  a.step(x1, g);
  restored->step(x2, g);
  EXPECT_EQ(x1, x2);
}

TEST(ClipGradNorm, ScalesOnlyWhenAboveTheLimit) {
  Eigen::VectorXd g(2);
  g << 3.0, 4.0;
  EXPECT_DOUBLE_EQ(clip_grad_norm(g, 10.0), 5.0);
  EXPECT_DOUBLE_EQ(g[0], 3.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm(g, 0.5), 5.0);
  EXPECT_NEAR(g.norm(), 0.5, 1e-6);
  EXPECT_NEAR(g[0] / g[1], 0.75, 1e-12);  // direction kept
}

}  // namespace
}  // namespace fw::rl

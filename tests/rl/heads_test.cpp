#include <gtest/gtest.h>

#include <cmath>

#include "rl/action_head.hpp"
#include "rl/categorical_head.hpp"
#include "rl/gaussian_head.hpp"
#include "toy_envs.hpp"

namespace fw::rl {
namespace {

using testing::central_diff;
using testing::rel_err;

Eigen::MatrixXd random_matrix(int r, int c, Rng& rng, double scale = 1.0) {
  Eigen::MatrixXd m(r, c);
  for (int i = 0; i < m.size(); ++i) m.data()[i] = scale * rng.normal();
  return m;
}

TEST(GaussianHead, LogProbAndEntropyMatchClosedForm) {
  GaussianHead h(2);
  Eigen::MatrixXd mean(2, 1), a(2, 1);
  mean << 0.5, -1.0;
  a << 1.0, 0.0;
  const double log_std[2] = {std::log(2.0), 0.0};
  Eigen::VectorXd logp;
  h.log_prob(mean, log_std, a, logp);
  // N(1; 0.5, 2^2) * N(0; -1, 1)
  const double expected = -0.5 * std::pow(0.5 / 2.0, 2) - std::log(2.0) - 0.5 * std::log(2 * M_PI) +
                          -0.5 * 1.0 - 0.5 * std::log(2 * M_PI);
  EXPECT_NEAR(logp[0], expected, 1e-12);
  EXPECT_NEAR(h.entropy(log_std), 2 * (0.5 + 0.5 * std::log(2 * M_PI)) + std::log(2.0), 1e-12);
}

TEST(GaussianHead, GradientsMatchFiniteDifferences) {
  Rng rng(11);
  const int d = 3, b = 5;
  GaussianHead h(d);
  Eigen::MatrixXd mean = random_matrix(d, b, rng), a = random_matrix(d, b, rng);
  double log_std[d] = {-0.3, 0.2, 0.7};
  Eigen::VectorXd wl = random_matrix(b, 1, rng), we = random_matrix(b, 1, rng);
  auto loss = [&] {
    Eigen::VectorXd logp;
    h.log_prob(mean, log_std, a, logp);
    return wl.dot(logp) + we.sum() * h.entropy(log_std);
  };
  Eigen::MatrixXd d_mean;
  double d_log_std[d] = {0, 0, 0};
  h.backward(mean, log_std, a, wl, we, d_mean, d_log_std);
  for (int i = 0; i < mean.size(); ++i)
    EXPECT_LT(rel_err(d_mean.data()[i], central_diff(loss, mean.data()[i])), 1e-6);
  for (int j = 0; j < d; ++j)
    EXPECT_LT(rel_err(d_log_std[j], central_diff(loss, log_std[j])), 1e-6) << j;
}

TEST(GaussianHead, SampleLogProbAgreesAndMomentsMatch) {
  GaussianHead h(1);
  const double mean = 0.3, log_std = std::log(0.5);
  Rng rng(5);
  double sum = 0, sum_sq = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double a;
    const double lp = h.sample(&mean, &log_std, rng, &a);
    if (i < 5) {
      Eigen::MatrixXd m(1, 1), am(1, 1);
      m << mean;
      am << a;
      Eigen::VectorXd logp;
      h.log_prob(m, &log_std, am, logp);
      EXPECT_NEAR(lp, logp[0], 1e-12);
    }
    sum += a;
    sum_sq += a * a;
  }
  EXPECT_NEAR(sum / n, 0.3, 0.02);
  EXPECT_NEAR(std::sqrt(sum_sq / n - std::pow(sum / n, 2)), 0.5, 0.02);
  double mode;
  h.mode(&mean, &mode);
  EXPECT_EQ(mode, mean);
}

TEST(CategoricalHead, LogProbAndEntropyMatchClosedForm) {
  CategoricalHead h({3, 2});
  Eigen::MatrixXd z(5, 1), a(2, 1);
  z << 1.0, 2.0, 3.0, 0.0, 0.0;
  a << 2, 1;
  Eigen::VectorXd logp, ent;
  h.log_prob(z, a, logp);
  h.entropy(z, ent);
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(logp[0], std::log(std::exp(3.0) / s) + std::log(0.5), 1e-12);
  double h3 = 0;
  for (double v : {1.0, 2.0, 3.0}) h3 -= std::exp(v) / s * std::log(std::exp(v) / s);
  EXPECT_NEAR(ent[0], h3 + std::log(2.0), 1e-12);
}

TEST(CategoricalHead, StableForHugeLogits) {
  CategoricalHead h({3});
  Eigen::MatrixXd z(3, 1), a(1, 1);
  z << 1000.0, 999.0, -1000.0;
  a << 1;
  Eigen::VectorXd logp, ent;
  h.log_prob(z, a, logp);
  h.entropy(z, ent);
  EXPECT_TRUE(std::isfinite(logp[0]));
  EXPECT_NEAR(logp[0], -1.0 - std::log(1.0 + std::exp(-1.0)), 1e-9);
  EXPECT_TRUE(std::isfinite(ent[0]));
}

TEST(CategoricalHead, GradientsMatchFiniteDifferences) {
  Rng rng(13);
  CategoricalHead h({3, 4, 2});
  const int b = 6;
  Eigen::MatrixXd z = random_matrix(h.num_logits(), b, rng, 1.5);
  Eigen::MatrixXd a(3, b);
  for (int i = 0; i < b; ++i) a.col(i) << rng.below(3), rng.below(4), rng.below(2);
  Eigen::VectorXd wl = random_matrix(b, 1, rng), we = random_matrix(b, 1, rng);
  auto loss = [&] {
    Eigen::VectorXd logp, ent;
    h.log_prob(z, a, logp);
    h.entropy(z, ent);
    return wl.dot(logp) + we.dot(ent);
  };
  Eigen::MatrixXd d_z;
  h.backward(z, a, wl, we, d_z);
  ASSERT_EQ(d_z.rows(), h.num_logits());
  for (int i = 0; i < z.size(); ++i)
    EXPECT_LT(rel_err(d_z.data()[i], central_diff(loss, z.data()[i])), 1e-6) << i;
}

TEST(CategoricalHead, SampleFrequenciesAndModeFollowProbabilities) {
  CategoricalHead h({3});
  const double z[3] = {0.0, std::log(2.0), std::log(7.0)};  // p = 0.1, 0.2, 0.7
  Rng rng(17);
  int counts[3] = {0, 0, 0};
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    double a;
    const double lp = h.sample(z, rng, &a);
    const int k = static_cast<int>(a);
    ++counts[k];
    EXPECT_NEAR(lp, std::log(std::exp(z[k]) / 10.0), 1e-12);
  }
  EXPECT_NEAR(counts[0] / double(n), 0.1, 0.01);
  EXPECT_NEAR(counts[1] / double(n), 0.2, 0.01);
  EXPECT_NEAR(counts[2] / double(n), 0.7, 0.01);
  double mode;
  h.mode(z, &mode);
  EXPECT_EQ(mode, 2.0);
}

TEST(ActionHead, DispatchesOnSpec) {
  const ActionHead g(ActionSpec::gaussian({"a", "b"}, {-1, -1}, {1, 1}));
  EXPECT_TRUE(g.is_gaussian());
  EXPECT_EQ(g.net_out_dim(), 2);
  EXPECT_EQ(g.num_extra_params(), 2);
  const ActionHead c(ActionSpec::categorical({"a", "b"}, {3, 5}));
  EXPECT_FALSE(c.is_gaussian());
  EXPECT_EQ(c.net_out_dim(), 8);
  EXPECT_EQ(c.num_extra_params(), 0);
  EXPECT_EQ(c.action_dim(), 2);
}

}  // namespace
}  // namespace fw::rl

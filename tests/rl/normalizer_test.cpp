#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "rl/obs_normalizer.hpp"
#include "rl/reward_scaler.hpp"
#include "rl/running_stats.hpp"

namespace fw::rl {
namespace {

TEST(RunningMeanStd, MatchesClosedFormMeanAndPopulationVariance) {
  Rng rng(1);
  const int n = 1000;
  std::vector<std::array<double, 2>> xs(n);
  RunningMeanStd rms(2);
  for (auto& x : xs) {
    x = {rng.normal(5.0, 2.0), rng.uniform(-1e3, 1e3)};
    rms.update(x.data());
  }
  for (int d = 0; d < 2; ++d) {
    double mean = 0;
    for (const auto& x : xs) mean += x[d];
    mean /= n;
    double var = 0;
    for (const auto& x : xs) var += (x[d] - mean) * (x[d] - mean);
    var /= n;
    EXPECT_NEAR(rms.mean()[d], mean, 1e-12 * std::max(1.0, std::abs(mean)));
    EXPECT_NEAR(rms.var(d), var, 1e-10 * var);
  }
  EXPECT_EQ(rms.count(), n);
}

TEST(RunningMeanStd, EmptyStatisticsAreIdentity) {
  ObsNormalizer norm(2);
  const double x[2] = {3.0, -4.0};
  double out[2];
  norm.normalize(x, out);
  EXPECT_NEAR(out[0], 3.0, 1e-7);
  EXPECT_NEAR(out[1], -4.0, 1e-7);
}

TEST(ObsNormalizer, StandardisesAndClips) {
  ObsNormalizer norm(1, /*clip=*/2.0);
  for (double v : {1.0, 2.0, 3.0, 4.0}) norm.observe(&v);  // mean 2.5, var 1.25
  double out;
  const double x = 3.0;
  norm.normalize(&x, &out);
  EXPECT_NEAR(out, 0.5 / std::sqrt(1.25 + 1e-8), 1e-12);
  const double far = 100.0;
  norm.normalize(&far, &out);
  EXPECT_EQ(out, 2.0);
}

TEST(ObsNormalizer, JsonRoundTripIsExact) {
  ObsNormalizer norm(3, 5.0);
  Rng rng(2);
  for (int i = 0; i < 37; ++i) {
    const double x[3] = {rng.normal(), rng.uniform(), rng.normal(1e3, 1e2)};
    norm.observe(x);
  }
  auto back = ObsNormalizer::from_json(nlohmann::json::parse(norm.to_json().dump()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  const double x[3] = {0.3, 0.7, 1100.0};
  double a[3], b[3];
  norm.normalize(x, a);
  back->normalize(x, b);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a[i], b[i]);
  EXPECT_EQ(back->clip(), 5.0);
}

TEST(ObsNormalizer, RejectsMismatchedJson) {
  nlohmann::json j = {{"count", 2}, {"mean", {1.0, 2.0}}, {"var", {1.0}}};
  EXPECT_FALSE(ObsNormalizer::from_json(j).ok());
  j = {{"count", 2}, {"mean", {1.0}}, {"var", {-1.0}}};
  EXPECT_FALSE(ObsNormalizer::from_json(j).ok());
}

TEST(RewardScaler, DividesByStdOfDiscountedReturnAndResetsAtEpisodeEnd) {
  const double gamma = 0.9;
  RewardScaler s(1, gamma, /*clip=*/1e9);
  const std::vector<double> rewards = {1.0, 2.0, -1.0, 0.5, 3.0};
  const std::vector<bool> done = {false, false, true, false, false};
  std::vector<double> returns;
  double g = 0;
  for (size_t k = 0; k < rewards.size(); ++k) {
    g = gamma * g + rewards[k];
    returns.push_back(g);
    const double scaled = s.scale(0, rewards[k], done[k]);
    if (done[k]) g = 0;
    double mean = 0, var = 0;
    for (double r : returns) mean += r;
    mean /= returns.size();
    for (double r : returns) var += (r - mean) * (r - mean);
    var /= returns.size();
    EXPECT_NEAR(scaled, rewards[k] / std::sqrt(var + 1e-8), 1e-9 * std::abs(scaled) + 1e-12)
        << "step " << k;
  }
  auto back = RewardScaler::from_json(s.to_json());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->scale(0, 1.0, false), s.scale(0, 1.0, false));
}

}  // namespace
}  // namespace fw::rl

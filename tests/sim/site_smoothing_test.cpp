// GPU power smoothing as the site simulator models it (sim/site_smoothing.hpp): the floor is
// held, ramps are limited, the hysteresis delays the ramp-down, and the energy cost is the
// integral of the power drawn above the natural draw.

#include "sim/site_smoothing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace fw::sim {
namespace {

constexpr double kDt = 0.01;

SmoothingSettings settings(double floor, double up, double down, double hyst_ms) {
  return {true, floor, up, down, hyst_ms};
}

// Runs the filter over `natural` (W per step) with the simulator's throttle: a draw above the
// ramp-up ceiling is held at the ceiling (the work slows). Returns the power drawn per step;
// `draw` receives what the work drew.
std::vector<double> run(const SmoothingSettings& s, const std::vector<double>& natural,
                        double floor_w, std::vector<double>* draw = nullptr) {
  SmoothingState st;
  std::vector<double> out;
  for (double p : natural) {
    const double d = std::min(p, smoothing_ceiling_w(s, st, kDt));
    if (draw != nullptr) draw->push_back(d);
    out.push_back(smoothing_step(s, st, d, floor_w, kDt));
  }
  return out;
}

std::vector<double> square(double lo, double hi, int lo_steps, int hi_steps, int periods) {
  std::vector<double> v;
  for (int p = 0; p < periods; ++p) {
    v.insert(v.end(), hi_steps, hi);
    v.insert(v.end(), lo_steps, lo);
  }
  return v;
}

TEST(SiteSmoothing, DisabledPassesTheDrawThrough) {
  const auto nat = square(120, 560, 20, 100, 3);
  const auto out = run(SmoothingSettings{}, nat, 400);
  EXPECT_EQ(out, nat);
}

TEST(SiteSmoothing, FloorIsHeldOnceReached) {
  // Idle at 120 W with a 420 W floor (60 % of 700 W): the envelope climbs at 100 W/s to the
  // floor and stays there.
  const std::vector<double> nat(1000, 120.0);
  const auto out = run(settings(0.6, 100, 100, 0), nat, 420);
  const int reach = static_cast<int>(std::ceil((420 - 120) / (100 * kDt)));
  EXPECT_NEAR(out[reach / 2], 120 + 100 * kDt * (reach / 2 + 1), 1e-9);
  for (size_t i = reach + 1; i < out.size(); ++i) ASSERT_DOUBLE_EQ(out[i], 420) << i;
}

TEST(SiteSmoothing, RampsAreLimitedBothWays) {
  const double up = 200, down = 50;
  const auto nat = square(120, 560, 150, 120, 6);
  const auto out = run(settings(0.2, up, down, 0), nat, 140);
  double max_up = 0, max_down = 0;
  for (size_t i = 1; i < out.size(); ++i) {
    max_up = std::max(max_up, out[i] - out[i - 1]);
    max_down = std::max(max_down, out[i - 1] - out[i]);
  }
  EXPECT_LE(max_up, up * kDt + 1e-9);
  EXPECT_LE(max_down, down * kDt + 1e-9);
  // Both limits bind somewhere (the swing is larger than one step of either).
  EXPECT_GT(max_up, 0.99 * up * kDt);
  EXPECT_GT(max_down, 0.99 * down * kDt);
  // Without smoothing the same series jumps by 440 W in a step.
  EXPECT_EQ(*std::max_element(nat.begin(), nat.end()) - 120, 440);
}

TEST(SiteSmoothing, HysteresisDelaysTheRampDown) {
  // 560 W for 1 s, then 120 W: the GPU holds 560 W for 300 ms, then falls at 100 W/s.
  std::vector<double> nat(100, 560.0);
  nat.insert(nat.end(), 600, 120.0);
  const auto out = run(settings(0.2, 1e6, 100, 300), nat, 140);
  for (int k = 0; k < 30; ++k) ASSERT_DOUBLE_EQ(out[100 + k], 560) << k;
  EXPECT_NEAR(out[130], 559, 1e-9);
  EXPECT_NEAR(out[139], 550, 1e-9);
  // No hysteresis: the fall starts at the first step below.
  const auto out0 = run(settings(0.2, 1e6, 100, 0), nat, 140);
  EXPECT_NEAR(out0[100], 559, 1e-9);
}

TEST(SiteSmoothing, EnergyCostIsTheIntegralAboveTheDraw) {
  // One drop of H = 440 W with hysteresis h and ramp-down r: the burn is H·h + H²/(2r) (a
  // rectangle, then a triangle), to within one step of the discretisation.
  const double h_s = 0.5, r = 200, H = 440;
  std::vector<double> nat(100, 560.0);
  nat.insert(nat.end(), 1000, 120.0);
  std::vector<double> draw;
  const auto out = run(settings(0.1, 1e6, r, h_s * 1000), nat, 70, &draw);
  double burn_j = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_GE(out[i], draw[i]);
    burn_j += (out[i] - draw[i]) * kDt;
  }
  const double expected = H * h_s + H * H / (2 * r);
  EXPECT_NEAR(burn_j, expected, H * kDt * 1.5);
  EXPECT_GT(burn_j, 0.9 * expected);
}

TEST(SiteSmoothing, RampUpLimitHoldsTheWorkBack) {
  // A rise of 440 W at 100 W/s: the work draws at most the ceiling, 4.4 s to full power.
  std::vector<double> nat(100, 120.0);
  nat.insert(nat.end(), 600, 560.0);
  std::vector<double> draw;
  const auto out = run(settings(0.2, 100, 100, 0), nat, 0, &draw);
  EXPECT_NEAR(draw[100 + 219], 120 + 100 * kDt * 220, 1e-6);
  EXPECT_LT(draw[100 + 219], 560);
  EXPECT_DOUBLE_EQ(out[100 + 450], 560);
}

TEST(SiteSmoothing, CapabilityAndValidation) {
  const SmoothingCapability* gb200 = find_smoothing_capability("gb200");
  ASSERT_NE(gb200, nullptr);
  EXPECT_EQ(find_smoothing_capability("h100-sxm5"), nullptr);
  EXPECT_TRUE(validate(settings(0.2, 10, 10, 0), *gb200).ok());
  EXPECT_TRUE(validate(settings(0.9, 10, 10, 0), *gb200).ok());
  Status low = validate(settings(0.1, 10, 10, 0), *gb200);
  EXPECT_FALSE(low.ok());
  EXPECT_NE(low.message().find("floor_frac"), std::string::npos) << low.message();
  EXPECT_FALSE(validate(settings(0.95, 10, 10, 0), *gb200).ok());
  EXPECT_FALSE(validate(settings(0.5, 0, 10, 0), *gb200).ok());
  EXPECT_FALSE(validate(settings(0.5, 10, 10, -1), *gb200).ok());
  EXPECT_TRUE(validate(SmoothingSettings{}, *gb200).ok());  // disabled
  EXPECT_EQ(describe(SmoothingSettings{}), "off");
}

}  // namespace
}  // namespace fw::sim

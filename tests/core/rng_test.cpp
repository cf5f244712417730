#include "core/rng.hpp"

#include <gtest/gtest.h>

namespace fw {
namespace {

TEST(Rng, SameSeedSameStream) {
  Rng a = Rng::stream(42, "sim.noise"), b = Rng::stream(42, "sim.noise");
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.next_u64(), b.next_u64());
}

TEST(Rng, NamedStreamsDiffer) {
  Rng a = Rng::stream(42, "sim.noise"), b = Rng::stream(42, "sim.lengths");
  EXPECT_NE(a.next_u64(), b.next_u64());
  EXPECT_NE(Rng::stream(1, "x").next_u64(), Rng::stream(2, "x").next_u64());
}

TEST(Rng, CopyContinuesIdentically) {
  Rng a(7);
  for (int i = 0; i < 10; ++i) a.next_u64();
  Rng b = a;
  EXPECT_EQ(a.normal(), b.normal());
  EXPECT_EQ(a, b);
}

TEST(Rng, MomentsOfNormalAndUniform) {
  Rng r(3);
  double s = 0, s2 = 0, u = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    double x = r.normal();
    s += x;
    s2 += x * x;
    u += r.uniform();
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
  EXPECT_NEAR(u / n, 0.5, 0.005);
}

}  // namespace
}  // namespace fw

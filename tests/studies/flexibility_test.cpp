// Sweep rows, the population study and the PFI predictor (experiment/{sweep,population,
// pfi_predict}.hpp).

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "studies/pfi_predict.hpp"
#include "studies/population.hpp"
#include "studies/sweep.hpp"

namespace fw::studies {
namespace {

TEST(Sweep, RowsTermsAndPfi) {
  // T/T_max = 0.5, 0.8, 1 at P/P_max = 0.4, 0.7, 1: terms 1.2 and 1.5, PFI 1.35.
  auto r = sweep_result("j", {{700, 1000, 10}, {300, 400, 5}, {500, 700, 8}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->rows.size(), 3u);
  EXPECT_DOUBLE_EQ(r->rows[0].cap_w, 300);
  EXPECT_NEAR(r->rows[0].term, 1.2, 1e-12);
  EXPECT_NEAR(r->rows[1].term, 1.5, 1e-12);
  EXPECT_TRUE(std::isnan(r->rows[2].term));
  EXPECT_NEAR(r->pfi, 1.35, 1e-12);
  auto j = to_alloc_job(*r, 0.25);
  ASSERT_EQ(j.curve.size(), 3u);
  EXPECT_DOUBLE_EQ(j.curve.back().power_w, 1000);
  EXPECT_DOUBLE_EQ(j.max_slowdown, 0.25);
  EXPECT_FALSE(sweep_result("flat", {{300, 400, 5}, {700, 1000, 5}}).ok());
}

TEST(Population, OptimalClosesTheGapAndNothingBeatsIt) {
  PopulationOptions o;
  o.populations = 6;
  o.jobs = 20;
  o.pool = 30;
  o.cuts = {0.1, 0.3};
  auto r = run_population(o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const auto& c : r->cuts) {
    for (const auto& m : c.methods) {
      ASSERT_FALSE(std::isnan(m.gap_mean)) << m.method;
      EXPECT_LE(m.gap_mean, 1 + 1e-9) << m.method;
      if (m.method == "optimal" || m.method == "equal") {
        EXPECT_NEAR(m.gap_mean, m.method == "optimal" ? 1.0 : 0.0, 1e-12);
      }
    }
  }
  EXPECT_GT(r->mean_pfi, 1.0);
}

TEST(PfiPredict, RidgeRecoversALinearTargetAndRoundTrips) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> n(0, 1);
  std::vector<PfiSample> s;
  for (int i = 0; i < 80; ++i) {
    PfiSample x;
    for (auto& v : x.x) v = n(rng);
    x.pfi = 1.5 + 0.3 * x.x[2] - 0.2 * x.x[3];
    s.push_back(x);
  }
  const PfiModel m = fit_pfi_model(s, "h200-sxm", 1e-6);
  PfiFeatures probe{0, 0, 1, 1, 0, 0};
  const double want = 1.5 + 0.3 - 0.2;
  EXPECT_NEAR(m.predict(probe), want, 0.02);
  EXPECT_GT(loo_r2(s, 1e-6), 0.99);
  EXPECT_LT(loo_r2(s, 1e-6, 1ull << 0), 0.1);  // an unrelated feature alone explains nothing
  auto back = pfi_model_from_json(pfi_model_json(m), "m.json");
  ASSERT_TRUE(back.ok());
  EXPECT_NEAR(back->predict(probe), m.predict(probe), 1e-12);
  EXPECT_FALSE(pfi_model_from_json(nlohmann::json{{"kind", "x"}}, "m.json").ok());
}

TEST(PfiPredict, FeaturesOfReadings) {
  TraceFeatureAccumulator acc;
  EXPECT_FALSE(acc.features(700).ok());
  for (int i = 0; i < 10; ++i) {
    GpuReading r;
    r.power_w = i == 0 ? 100 : 500;  // one low sample of ten
    r.sm_util = 0.8;
    r.mem_util = 0.5;
    acc.add(r);
  }
  auto f = acc.features(700);
  ASSERT_TRUE(f.ok());
  EXPECT_NEAR((*f)[0], 0.8, 1e-12);
  EXPECT_NEAR((*f)[2], 0.4, 1e-12);
  EXPECT_NEAR((*f)[3], 460.0 / 700, 1e-12);
  EXPECT_NEAR((*f)[5], 0.1, 1e-12);
}

TEST(PfiPredict, SimulatedSamplesSpanTheClasses) {
  auto s = simulate_pfi_samples(12, "h200-sxm", 5, 30);
  ASSERT_TRUE(s.ok()) << s.status().message();
  double lo = 1e9, hi = 0;
  for (const auto& x : *s) lo = std::min(lo, x.pfi), hi = std::max(hi, x.pfi);
  EXPECT_GT(hi - lo, 0.2);
  EXPECT_FALSE(simulate_pfi_samples(1, "no-gpu", 5).ok());
}

}  // namespace
}  // namespace fw::studies

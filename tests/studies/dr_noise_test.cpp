// The replay plant's noise and dips against the field fit (issue 45; scripts/fit_dr_noise.py,
// docs/simulator.md "DR replay noise and dips"): the site's detrended 1-minute sd at the
// field-calibrated defaults and under `noise: quiet`, on calibration seeds 1000001-1000003
// (the results use seeds 1-3; nothing here is run on them), and the `noise`/`dips` keys.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "studies/dr_event.hpp"
#include "studies/dr_plant.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::studies {
namespace {

namespace fs = std::filesystem;

// The field's site sd of 1-minute means (APS, both spans outside the event) as the script
// prints it (`site sd of 1-minute means (APS, both spans)`), and the tolerance a replay of
// 3 x 6 h must meet: the sd of an sd estimated from ~1000 minutes is ~2 %, the two APS spans
// differ by 3 %, so ±10 % relative.
constexpr double kFieldSiteSd = 0.00286;
constexpr double kSiteSdTolerance = 0.10;
constexpr uint64_t kCalibrationSeeds[] = {1000001, 1000002, 1000003};

const std::string kSource = FLEXWATT_SOURCE_DIR;

// The site's 1-minute means of an uncapped run of `hours`, minutes with a job's dip in them
// or beside them left out (the script leaves out dip minutes and their neighbours), linearly
// detrended: the sd / the mean level.
double site_minute_sd_frac(const DrEvent& ev, double hours) {
  DrReplayPlant plant(ev);
  const double dt = ev.sample_period_s;
  const int per_min = static_cast<int>(std::lround(60 / dt));
  const int minutes = static_cast<int>(hours * 60);
  std::vector<double> mean(minutes, 0);
  std::vector<bool> dip(minutes, false);
  for (int m = 0; m < minutes; ++m) {
    for (int k = 1; k <= per_min; ++k) {
      const double t = (m * per_min + k) * dt;
      plant.step(t);
      double site = 0;
      for (double w : plant.read().node_power_w) site += w;
      mean[m] += site / per_min;
      for (const auto& j : ev.jobs) dip[m] = dip[m] || dr_in_dip(j, t);
    }
  }
  std::vector<double> x, y;
  for (int m = 1; m + 1 < minutes; ++m) {  // the first minute: the lag settling
    if (dip[m - 1] || dip[m] || dip[m + 1]) continue;
    x.push_back(m);
    y.push_back(mean[m]);
  }
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  const double b = sxy / sxx;
  double ss = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - (my + b * (x[i] - mx));
    ss += r * r;
  }
  return std::sqrt(ss / n) / my;
}

// Pooled over the calibration seeds (variances averaged).
double pooled_sd_frac(DrEvent ev, double hours) {
  double v = 0;
  for (uint64_t s : kCalibrationSeeds) {
    ev.seed = s;
    const double sd = site_minute_sd_frac(ev, hours);
    v += sd * sd / std::size(kCalibrationSeeds);
  }
  return std::sqrt(v);
}

// The sd the plant's model gives: the jobs' 1-minute sds combined as independent.
double model_sd_frac(const DrEvent& ev, double noise_frac_or_0) {
  double var = 0, level = 0;
  for (const auto& j : ev.jobs) {
    const double l = j.gpus * j.curve.back().power_w;
    const double f = noise_frac_or_0 > 0 ? noise_frac_or_0 : j.noise_frac_1min;
    var += f * l * f * l;
    level += l;
  }
  return std::sqrt(var) / level;
}

class DrNoiseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fw_drn_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    fs::copy_file(fs::path(kSource) / "data/a100_power_cap_sweep.csv", dir_ / "sweeps.csv",
                  fs::copy_options::overwrite_existing);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  fs::path dir_;
};

// The APS jobs (their GPUs and measured levels) with no noise or dips keys: the defaults.
const char* kApsJobsNoKeys = R"(sample_period_s: 0.5
duration_s: 24000
baseline_w: measured
jobs:
  - {name: ft, gpus: 32, sweep_csv: sweeps.csv, sweep_job: ft_llama_8b_dolly, tier_min: 0.75,
     baseline_w_per_gpu: 344.3}
  - {name: i1, gpus: 32, sweep_csv: sweeps.csv, sweep_job: infer_llama_8b, tier_min: 0.9,
     baseline_w_per_gpu: 367.2}
  - {name: i2, gpus: 48, sweep_csv: sweeps.csv, sweep_job: infer_llama_8b, tier_min: 0.9,
     baseline_w_per_gpu: 365.0}
  - {name: i3, gpus: 32, sweep_csv: sweeps.csv, sweep_job: infer_llama_8b, tier_min: 0.9,
     baseline_w_per_gpu: 365.2}
  - {name: p1, gpus: 48, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.5,
     baseline_w_per_gpu: 373.1}
  - {name: p2, gpus: 48, sweep_csv: sweeps.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.5,
     baseline_w_per_gpu: 386.4}
event:
  steps:
    - {start_s: 5400, ramp_s: 900, depth: 0.25}
  end_s: 17580
  release_ramp_s: 840
)";

TEST_F(DrNoiseTest, ShippedApsReplayMatchesTheFieldsSiteSd) {
  auto ev = load_dr_event(kSource + "/scenarios/dr/aps-2025-05-01.yaml");
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->noise, DrNoise::kField);
  const double sd = pooled_sd_frac(*ev, 6);
  RecordProperty("site_sd_frac", std::to_string(sd));
  EXPECT_NEAR(sd, kFieldSiteSd, kSiteSdTolerance * kFieldSiteSd)
      << "replayed site sd " << sd << ", model " << model_sd_frac(*ev, 0);
}

TEST_F(DrNoiseTest, DefaultJobNoiseGivesTheFieldsSiteSdForTheFieldsJobs) {
  auto ev = load_dr_event(write("aps.yaml", kApsJobsNoKeys));
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  for (const auto& j : ev->jobs) {
    EXPECT_DOUBLE_EQ(j.noise_frac_1min, kDrFieldNoiseFrac1min) << j.name;
    EXPECT_DOUBLE_EQ(j.dips.period_s, kDrFieldDipPeriodS) << j.name;
    EXPECT_DOUBLE_EQ(j.dips.duration_s, kDrFieldDipDurationS) << j.name;
    EXPECT_DOUBLE_EQ(j.dips.level, kDrFieldDipLevel) << j.name;
  }
  EXPECT_DOUBLE_EQ(ev->noise_tau_s, kDrNoiseTauS);
  // Default dips spread over the hour: job k of 6 first at (k + 0.5) / 6 of it.
  EXPECT_DOUBLE_EQ(ev->jobs[0].dips.phase_s, 300);
  EXPECT_DOUBLE_EQ(ev->jobs[5].dips.phase_s, 3300);
  const double sd = pooled_sd_frac(*ev, 6);
  RecordProperty("site_sd_frac", std::to_string(sd));
  EXPECT_NEAR(sd, kFieldSiteSd, kSiteSdTolerance * kFieldSiteSd)
      << "replayed site sd " << sd << ", model " << model_sd_frac(*ev, 0);
}

TEST_F(DrNoiseTest, QuietIsThePlantBeforeIssue45) {
  auto ev = load_dr_event(kSource + "/scenarios/dr/aps-2025-05-01.yaml");
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  const double field_ft = ev->jobs[0].noise_frac_1min;
  set_dr_noise(*ev, DrNoise::kQuiet);
  for (const auto& j : ev->jobs) {
    EXPECT_DOUBLE_EQ(j.noise_frac_1min, 0.005) << j.name;
    EXPECT_EQ(j.dips.period_s, 0) << j.name;
  }
  // The old default (0.5 % per job, independent) on the APS jobs: 0.5 % x sqrt(sum L^2) / sum L.
  const double expect = model_sd_frac(*ev, 0.005);
  EXPECT_NEAR(expect, 0.0021, 0.0001);
  const double sd = pooled_sd_frac(*ev, 6);
  RecordProperty("site_sd_frac", std::to_string(sd));
  EXPECT_NEAR(sd, expect, kSiteSdTolerance * expect);
  EXPECT_LT(sd, 0.8 * kFieldSiteSd);  // quiet is quieter than the field by more than the noise
  // Back to field: the jobs' own again.
  set_dr_noise(*ev, DrNoise::kField);
  EXPECT_DOUBLE_EQ(ev->jobs[0].noise_frac_1min, field_ft);
  EXPECT_EQ(ev->jobs[0].dips.period_s, 3600);
  EXPECT_EQ(ev->jobs[1].dips.period_s, 0);  // `dips: none`
}

TEST_F(DrNoiseTest, NoiseKeyDipsNoneAndPlantErrorAtTheRoot) {
  std::string y = kApsJobsNoKeys;
  y = "noise: quiet\nplant_error_frac: 0.05\n" + y;
  auto ev = load_dr_event(write("q.yaml", y));
  ASSERT_TRUE(ev.ok()) << ev.status().message();
  EXPECT_EQ(ev->noise, DrNoise::kQuiet);
  EXPECT_DOUBLE_EQ(ev->plant_error_frac, 0.05);
  EXPECT_DOUBLE_EQ(ev->jobs[0].noise_frac_1min, kDrQuietNoiseFrac1min);
  EXPECT_EQ(ev->jobs[0].dips.period_s, 0);
  set_dr_noise(*ev, DrNoise::kField);  // the file's own values were kept
  EXPECT_DOUBLE_EQ(ev->jobs[0].noise_frac_1min, kDrFieldNoiseFrac1min);
  EXPECT_DOUBLE_EQ(ev->jobs[0].dips.period_s, kDrFieldDipPeriodS);

  std::string n = kApsJobsNoKeys;
  n.replace(n.find("baseline_w_per_gpu: 344.3}"), 26, "baseline_w_per_gpu: 344.3, dips: none}");
  n.replace(n.find("baseline_w_per_gpu: 367.2}"), 26,
            "baseline_w_per_gpu: 367.2, dips: {period_s: 1800}}");
  auto d = load_dr_event(write("n.yaml", n));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->jobs[0].dips.period_s, 0);
  EXPECT_FALSE(dr_in_dip(d->jobs[0], 300));
  EXPECT_DOUBLE_EQ(d->jobs[1].dips.period_s, 1800);
  EXPECT_DOUBLE_EQ(d->jobs[1].dips.phase_s, 0);
  EXPECT_DOUBLE_EQ(d->jobs[1].dips.duration_s, kDrFieldDipDurationS);
  EXPECT_DOUBLE_EQ(d->jobs[1].dips.level, kDrFieldDipLevel);
  EXPECT_TRUE(dr_in_dip(d->jobs[1], 1810));

  auto bad = load_dr_event(write("b.yaml", "noise: loud\n" + std::string(kApsJobsNoKeys)));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("b.yaml:1: noise: expected `field` or `quiet`"),
            std::string::npos)
      << bad.status().message();
  std::string bd = kApsJobsNoKeys;
  bd.replace(bd.find("baseline_w_per_gpu: 344.3}"), 26, "baseline_w_per_gpu: 344.3, dips: 3}");
  auto bad2 = load_dr_event(write("b2.yaml", bd));
  ASSERT_FALSE(bad2.ok());
  EXPECT_NE(bad2.status().message().find("jobs.0.dips: expected `none` or a map"),
            std::string::npos)
      << bad2.status().message();
}

}  // namespace
}  // namespace fw::studies

// Occupancy versus volume (issue item 4; docs/sources.md §1a [2nd]): on 72B sharded
// over four A100s the KV cache admits fewer sequences than a rollout holds, so group size
// changes how long generation lasts but not the instantaneous power, while generation
// concurrency changes both. Authority = |mean power at the knob's highest setting − at its
// lowest| / mean power at the highest.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

constexpr int kGc = static_cast<int>(Knob::kGenConcurrency);
constexpr int kGs = static_cast<int>(Knob::kGroupSize);

double mean_power(const std::vector<std::string>& sets,
                  const char* path = "scenarios/grpo-72b-a100x4.yaml") {
  const Scenario s = testing::load_or_die(path, sets);
  const auto run = testing::run_scenario(s, 7, 3600);
  double sum = 0;
  int64_t n = 0;
  for (const auto& snap : run.samples) {
    for (const auto& g : snap.gpus) {
      sum += g.power_w;
      ++n;
    }
  }
  return sum / static_cast<double>(n);
}

TEST(Authority, GroupSizeHasUnderAThirdOfConcurrencyAuthorityOn72b) {
  const Scenario s = testing::load_or_die("scenarios/grpo-72b-a100x4.yaml");
  const JobSpec& j = s.jobs[0];
  // The mechanism's premise: the KV cache admits fewer sequences than the rollout holds.
  EXPECT_LT(j.grpo.kv_capacity_seqs, j.grpo.prompts_per_step * j.knob_min[kGs] * 4);
  const auto k = [](const char* key, double v) {
    return std::string(key) + "=" + std::to_string(std::lround(v));
  };
  const double c_lo = mean_power({k("jobs.0.gen_concurrency", j.knob_min[kGc])});
  const double c_hi = mean_power({k("jobs.0.gen_concurrency", j.knob_max[kGc])});
  const double g_lo = mean_power({k("jobs.0.group_size", j.knob_min[kGs])});
  const double g_hi = mean_power({k("jobs.0.group_size", j.knob_max[kGs])});
  const double a_conc = std::fabs(c_hi - c_lo) / c_hi;
  const double a_group = std::fabs(g_hi - g_lo) / g_hi;
  std::printf(
      "[calib] 72b authority: concurrency %.3f (%.1f -> %.1f W), group size %.3f "
      "(%.1f -> %.1f W), ratio %.2f\n",
      a_conc, c_lo, c_hi, a_group, g_lo, g_hi, a_group / a_conc);
  EXPECT_LT(a_group, a_conc / 3);
  // §1a: concurrency keeps 17–22 % authority (secondhand, measured on a generation-only
  // proxy). Over the whole GRPO loop low concurrency also lengthens the low-power generation
  // share of each step, so the simulated figure sits higher; tolerance 0.12..0.35.
  EXPECT_GT(a_conc, 0.12);
  EXPECT_LT(a_conc, 0.35);
}

// The like-for-like case: the research's actuator sweep ran on a generation-only 72B proxy
// (§1a [2nd]: generation batch size swings mean power 22.5 %, "17–22 %" in the abstract; group
// size < 5 %, 147 W vs 147 W). Tolerance: the band, 15–25 %, and < 5 %.
TEST(Authority, GenerationOnly72bConcurrencyInPublishedBand) {
  const char* path = "scenarios/grpo-72b-a100x4-rollout.yaml";
  const Scenario s = testing::load_or_die(path);
  const JobSpec& j = s.jobs[0];
  const auto k = [](const char* key, double v) {
    return std::string(key) + "=" + std::to_string(std::lround(v));
  };
  const double c_lo = mean_power({k("jobs.0.gen_concurrency", j.knob_min[kGc])}, path);
  const double c_hi = mean_power({k("jobs.0.gen_concurrency", j.knob_max[kGc])}, path);
  const double g_lo = mean_power({k("jobs.0.group_size", j.knob_min[kGs])}, path);
  const double g_hi = mean_power({k("jobs.0.group_size", j.knob_max[kGs])}, path);
  const double a_conc = std::fabs(c_hi - c_lo) / c_hi;
  const double a_group = std::fabs(g_hi - g_lo) / g_hi;
  std::printf("[calib] 72b rollout authority: concurrency %.3f, group size %.3f\n", a_conc,
              a_group);
  EXPECT_GT(a_conc, 0.15);
  EXPECT_LT(a_conc, 0.25);
  EXPECT_LT(a_group, 0.05);
}

// §1a [2nd]: 72B rollout generation (the paper measured a generation proxy), per-device mean
// ≈ 147 W (37 % of TDP), default knobs. Tolerance ±25 W.
TEST(Calibration, Grpo72bGenerationPerDeviceMeanPower) {
  const Scenario s = testing::load_or_die("scenarios/grpo-72b-a100x4.yaml");
  const auto run = testing::run_scenario(s, 7, 3600);
  std::vector<double> p;
  for (const auto& snap : run.samples) {
    if (snap.jobs[0].phase != Phase::kGenerate) continue;
    for (const auto& g : snap.gpus) p.push_back(g.power_w);
  }
  std::printf("[calib] 72b generation mean per-device power %.1f W\n", testing::mean(p));
  EXPECT_NEAR(testing::mean(p), 147, 25);
}

}  // namespace
}  // namespace fw::sim

// Per-job realism keys: `mix` (elasticity), `hetero` (per-GPU offsets, noise, imbalance),
// `duty` (periodic low phases); parsing and their effect on the plant.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "analysis/pfi.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {

std::string job_yaml(const std::string& gpu, int n, const std::string& extra) {
  return "name: t\ngpus: [{model: " + gpu + ", count: " + std::to_string(n) +
         "}]\nbudget: {watts: 5000}\nsim: {noise_w: 0}\n"
         "jobs: [{kind: pretrain, workload: llama-8b-ft, gpus: " +
         std::to_string(n) + ", tokens_per_iter: 1000" + extra + "}]\n";
}

// Two fine-tuning jobs of one preset differ by their mix: a more memory-bound one (lower
// compute_bound) is less elastic (higher PFI).
TEST(Realism, MixKeySetsElasticity) {
  double pfi[2];
  const char* mixes[2] = {", mix: {compute_bound: 0.6}", ", mix: {compute_bound: 0.25}"};
  for (int k = 0; k < 2; ++k) {
    auto s =
        parse_scenario(job_yaml("a100-sxm4-80gb", 1,
                                std::string(mixes[k]) +
                                    ", duty: {every_s: 0}, hetero: {offset_sd: 0, noise_sd: 0}"),
                       "t", {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto pts =
        sweep_caps(*s, 0, {150, 200, 250, 300, 350, 400}, {.warmup_s = 20, .measure_s = 200});
    ASSERT_TRUE(pts.ok());
    auto p = compute_pfi(*pts, 0.002);
    ASSERT_TRUE(p.ok());
    pfi[k] = *p;
  }
  EXPECT_LT(pfi[0] * 1.2, pfi[1]) << pfi[0] << " vs " << pfi[1];
}

std::vector<double> gpu_means(const Scenario& s, uint64_t seed, double t0, double t1) {
  auto plant = make_cluster(s, seed);
  Snapshot snap;
  std::vector<double> m(s.gpus.size(), 0.0);
  int n = 0;
  for (double t = t0; t <= t1; t += 0.5, ++n) {
    EXPECT_TRUE(plant->read(t, snap).ok());
    for (size_t g = 0; g < m.size(); ++g) m[g] += snap.gpus[g].power_w;
  }
  for (double& x : m) x /= n;
  return m;
}

TEST(Realism, ImbalanceAndOffsetsSpreadGpus) {
  auto even = parse_scenario(
      job_yaml("h100-sxm5", 8, ", duty: {every_s: 0}, hetero: {offset_sd: 0, noise_sd: 0}"), "t",
      {});
  auto imb = parse_scenario(job_yaml("h100-sxm5", 8,
                                     ", duty: {every_s: 0}, hetero: {offset_sd: 0, noise_sd: 0, "
                                     "imbalance: 0.3}"),
                            "t", {});
  auto off = parse_scenario(
      job_yaml("h100-sxm5", 8, ", duty: {every_s: 0}, hetero: {offset_sd: 0.02, noise_sd: 0.02}"),
      "t", {});
  ASSERT_TRUE(even.ok() && imb.ok() && off.ok());
  const auto e = gpu_means(*even, 1, 20, 120);
  const auto i = gpu_means(*imb, 1, 20, 120);
  const auto o = gpu_means(*off, 1, 20, 120);
  auto spread = [](const std::vector<double>& v) {
    return *std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end());
  };
  EXPECT_LT(spread(e), 0.5);  // identical GPUs
  // Imbalance: lighter GPUs draw less; the busiest carries the full load (its power is the
  // even job's).
  EXPECT_GT(spread(i), 30);
  EXPECT_NEAR(*std::max_element(i.begin(), i.end()), e[0], 10);
  EXPECT_GT(spread(o), 10);                   // offsets of sd 14 W on 700 W
  EXPECT_EQ(o, gpu_means(*off, 1, 20, 120));  // drawn from the run seed: reproducible
  EXPECT_NE(o, gpu_means(*off, 2, 20, 120));
}

// hetero.change_at_s: the work shares are drawn again at that time; before it the run is the
// run without the key, after it the GPUs' loads differ from before.
TEST(Realism, ScheduledImbalanceChangeRedrawsWorkShares) {
  const std::string base =
      ", duty: {every_s: 0}, hetero: {offset_sd: 0, noise_sd: 0, imbalance: 0.3";
  auto plain = parse_scenario(job_yaml("h100-sxm5", 8, base + "}"), "t", {});
  auto changed = parse_scenario(
      job_yaml("h100-sxm5", 8, base + ", change_at_s: 150, imbalance_after: 0.3}"), "t", {});
  ASSERT_TRUE(plain.ok() && changed.ok()) << changed.status().message();
  EXPECT_EQ(changed->jobs[0].hetero.change_at_s, 150);
  EXPECT_EQ(changed->jobs[0].hetero.imbalance_after, 0.3);
  EXPECT_EQ(gpu_means(*plain, 1, 20, 120), gpu_means(*changed, 1, 20, 120));  // before: same
  const auto before = gpu_means(*changed, 1, 20, 120), after = gpu_means(*changed, 1, 170, 270);
  double moved = 0;
  for (size_t g = 0; g < before.size(); ++g)
    moved = std::max(moved, std::abs(after[g] - before[g]));
  EXPECT_GT(moved, 20);  // some GPU's load moved by more than 20 W on 700 W
  // The busiest GPU still carries the full load.
  EXPECT_NEAR(*std::max_element(after.begin(), after.end()),
              *std::max_element(before.begin(), before.end()), 10);
  // imbalance_after 0: every GPU carries the full load after the change.
  auto even = parse_scenario(
      job_yaml("h100-sxm5", 8, base + ", change_at_s: 150, imbalance_after: 0}"), "t", {});
  ASSERT_TRUE(even.ok());
  const auto e = gpu_means(*even, 1, 170, 270);
  EXPECT_LT(*std::max_element(e.begin(), e.end()) - *std::min_element(e.begin(), e.end()), 0.5);
  EXPECT_FALSE(
      parse_scenario(job_yaml("h100-sxm5", 8, base + ", imbalance_after: 0.95}"), "t", {}).ok());
}

TEST(Realism, BlocksRejectUnknownKeysAndBadValues) {
  auto a = parse_scenario(job_yaml("a100-sxm4-80gb", 1, ", hetero: {offset: 0.1}"), "t", {});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("offset"), std::string::npos) << a.status().message();
  auto b = parse_scenario(job_yaml("a100-sxm4-80gb", 1, ", duty: {every_s: -1}"), "t", {});
  EXPECT_FALSE(b.ok());
  auto c = parse_scenario(job_yaml("a100-sxm4-80gb", 1, ", mix: {comm_share: 0.95}"), "t", {});
  EXPECT_FALSE(c.ok());
  // A whole block from the command line.
  auto d = parse_scenario(job_yaml("a100-sxm4-80gb", 1, ""), "t", {"jobs.0.duty={every_s: 0}"});
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->jobs[0].duty.every_s, 0);
}

}  // namespace
}  // namespace fw::sim

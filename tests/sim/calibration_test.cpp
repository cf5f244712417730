// Calibration of the simulator against published figures. Each test states its source
// (research/calibration.md section) and tolerance; the figures measured are printed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "analysis/pfi.hpp"
#include "core/csv.hpp"
#include "sim/sweep.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {
using testing::load_or_die;
using testing::mean;
using testing::run_scenario;

double frac_above(const std::vector<double>& v, double thr) {
  double n = 0;
  for (double x : v) n += x > thr;
  return v.empty() ? 0 : n / static_cast<double>(v.size());
}

// §1a [2nd]: GRPO-7B on one A100, uncontrolled (group size 8), exceeds the 314.6 W budget on
// 216 of 500 steps; mean ≈ 230 W (1.777 kWh over 500 steps of ~55 s); ~3.5k tokens per step.
TEST(Calibration, Grpo7bUncontrolledExceedsBudgetOften) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml");
  const auto run = run_scenario(s, 1, 1800);
  std::vector<double> p;
  for (const auto& snap : run.samples) p.push_back(snap.gpus[0].power_w);
  const double share = frac_above(p, 314.6);
  const auto& last = run.samples.back().jobs[0];
  const double step_s = 1800 / last.steps_total;
  const double tok_per_step = last.tokens_total / last.steps_total;
  std::printf("[calib] grpo-7b: share>314.6W %.3f, mean %.1f W, step %.1f s, tokens/step %.0f\n",
              share, mean(p), step_s, tok_per_step);
  EXPECT_GE(share, 0.15);                // "a large share" of 0.5 s samples
  EXPECT_NEAR(mean(p), 230, 30);         // secondhand, ±30 W
  EXPECT_NEAR(step_s, 55, 12);           // secondhand, ±12 s
  EXPECT_NEAR(tok_per_step, 3460, 700);  // 1,731,712 tokens / 500 steps, ±20 %
}

// §2.4 [primary data]: A100-80GB vLLM decode-dominated 280–305 W, prefill spikes 440–520 W in
// single 250 ms samples. Simulated: GRPO-7B generation at high concurrency (128 sequences).
TEST(Calibration, A100DecodePowerAndPrefillSpikes) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml",
                                 {"jobs.0.prompts_per_step=8", "jobs.0.group_size=16",
                                  "jobs.0.gen_concurrency=64", "sim.noise_w=0"});
  const auto run = run_scenario(s, 3, 600);
  std::vector<double> dec;
  double peak_gen = 0;
  for (const auto& snap : run.samples) {
    if (snap.jobs[0].phase != Phase::kGenerate) continue;
    dec.push_back(snap.gpus[0].power_w);
    peak_gen = std::max(peak_gen, snap.gpus[0].power_instant_w);
  }
  ASSERT_FALSE(dec.empty());
  std::sort(dec.begin(), dec.end());
  const double median = dec[dec.size() / 2];
  std::printf("[calib] a100 decode: median %.1f W, peak instant in generation %.1f W\n", median,
              peak_gen);
  EXPECT_GE(median, 280);
  EXPECT_LE(median, 305);
  EXPECT_GT(peak_gen, 400);
}

// §2.3 [primary data]: 8x H100 SXM training, steady state 530–575 W per GPU.
TEST(Calibration, H100DenseTrainingSteadyPower) {
  const Scenario s = load_or_die("scenarios/pretrain-dense-h100x8.yaml");
  const auto run = run_scenario(s, 1, 400);
  std::vector<double> p;
  for (const auto& snap : run.samples) {
    if (snap.time_s < 40) continue;  // after start-up
    const Phase ph = snap.jobs[0].phase;
    if (ph == Phase::kCheckpoint || ph == Phase::kDataStall) continue;
    for (const auto& g : snap.gpus) p.push_back(g.power_w);
  }
  std::sort(p.begin(), p.end());
  const double p10 = p[p.size() / 10], p90 = p[p.size() * 9 / 10];
  std::printf("[calib] h100 dense: mean %.1f W, p10 %.1f, p90 %.1f\n", mean(p), p10, p90);
  EXPECT_GE(mean(p), 530);
  EXPECT_LE(mean(p), 575);
  EXPECT_GE(p10, 500);  // tolerance: 30 W around the published band
  EXPECT_LE(p90, 605);
}

// §2.2 [primary data]: Hopper power.draw is a trailing 1 s mean, seen as ~1 s linear ramps
// after a step change (69→116 W over ~1 s at job start in the H100 trace).
TEST(Calibration, HopperOneSecondAveragingRamp) {
  Scenario s = load_or_die("scenarios/pretrain-dense-h100x8.yaml", {"sim.noise_w=0"});
  auto plant = make_cluster(s, 1);
  Snapshot snap;
  const double start = s.jobs[0].start_s;
  ASSERT_TRUE(plant->read(start - 1, snap).ok());
  const double before = snap.gpus[0].power_w;
  double t10 = -1, t90 = -1, inst_at = -1, after = 0;
  ASSERT_TRUE(plant->read(start + 3, snap).ok());
  after = plant->true_power_w(0);
  auto plant2 = make_cluster(s, 1);
  for (double t = start - 1; t <= start + 3; t += s.sim.dt_s) {
    ASSERT_TRUE(plant2->read(t, snap).ok());
    const double lo = before + 0.1 * (after - before), hi = before + 0.9 * (after - before);
    if (t10 < 0 && snap.gpus[0].power_w > lo) t10 = t;
    if (t90 < 0 && snap.gpus[0].power_w > hi) t90 = t;
    if (inst_at < 0 && snap.gpus[0].power_instant_w > hi) inst_at = t;
  }
  std::printf(
      "[calib] hopper ramp: %.0f -> %.0f W, power_w 10-90%% in %.2f s, instant at +%.2f s\n",
      before, after, t90 - t10, inst_at - start);
  EXPECT_GE(t90 - t10, 0.6);
  EXPECT_LE(t90 - t10, 1.2);
  EXPECT_LE(inst_at - start, 0.25);
}

std::map<std::string, std::vector<PfiPoint>> read_a100_sweep() {
  std::map<std::string, std::vector<PfiPoint>> out;
  auto r = CsvReader::open(testing::source_path("data/a100_power_cap_sweep.csv"));
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return out;
  (*r)->next();  // header
  while ((*r)->next()) {
    const auto& f = (*r)->fields();
    PfiPoint p;
    parse_double(f[1], p.cap_w);
    parse_double(f[2], p.throughput);
    parse_double(f[3], p.power_w);
    out[std::string(f[0])].push_back(p);
  }
  return out;
}

std::string a100_job_yaml(const std::string& workload) {
  return "name: a100-sweep\ngpus: [{model: a100-sxm4-80gb, count: 8}]\n"
         "budget: {watts: 3200, scope: node}\nsim: {noise_w: 0}\n"
         "jobs: [{kind: pretrain, workload: " +
         workload + ", gpus: 8, tokens_per_iter: 1000, duty: {every_s: 0}}]\n";
}

// A100 sweep rows (data/a100_power_cap_sweep.csv, Emerald demo [primary data]): simulated PFI
// on the same cap grid within ±15 % of the measured rows' PFI.
TEST(Calibration, A100PfiMatchesSweepRows) {
  const auto rows = read_a100_sweep();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pt_mpt_13b_lg", "mpt-13b-pt"}, {"ft_llama_8b_dolly", "llama-8b-ft"}};
  for (const auto& [row, workload] : cases) {
    ASSERT_TRUE(rows.count(row)) << row;
    auto measured = compute_pfi(rows.at(row));
    ASSERT_TRUE(measured.ok());
    std::vector<double> caps;
    for (const auto& p : rows.at(row)) caps.push_back(p.cap_w);
    auto s = parse_scenario(a100_job_yaml(workload), "a100-sweep", {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto pts = sweep_caps(*s, 0, caps, {.warmup_s = 20, .measure_s = 300, .seed = 1});
    ASSERT_TRUE(pts.ok());
    auto sim = compute_pfi(*pts, 0.002);
    ASSERT_TRUE(sim.ok()) << sim.status().message();
    std::printf("[calib] a100 %s: measured PFI %.2f, simulated %.2f; uncapped %.0f W/GPU\n",
                row.c_str(), *measured, *sim, pts->back().power_w / 8);
    for (const auto& p : *pts) {
      std::printf("        cap %3.0f: T/Tmax %.3f P/GPU %.1f\n", p.cap_w,
                  p.throughput / pts->back().throughput, p.power_w / 8);
    }
    EXPECT_NEAR(*sim, *measured, 0.15 * *measured) << row;
  }
}

std::string h200_job_yaml(const std::string& workload) {
  return "name: h200-sweep\ngpus: [{model: h200-sxm, count: 8}]\n"
         "budget: {watts: 5600, scope: node}\nsim: {noise_w: 0}\n"
         "jobs: [{kind: pretrain, workload: " +
         workload + ", gpus: 8, tokens_per_iter: 1000, duty: {every_s: 0}}]\n";
}

// §1b [primary]: H200 PFI, caps 200–700 W in 100 W steps. Group medians dense 1.27, MoE PT
// 1.43, MoE FT 2.10; per-job ranges dense 1.10–1.52, MoE PT 1.24–1.57, MoE FT 1.79–2.67.
TEST(Calibration, H200PfiOrderingAndRanges) {
  const std::vector<double> caps = {200, 300, 400, 500, 600, 700};
  std::map<std::string, double> pfi;
  for (const char* w : {"dense-pt", "moe-pt", "moe-ft"}) {
    auto s = parse_scenario(h200_job_yaml(w), "h200-sweep", {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto pts = sweep_caps(*s, 0, caps, {.warmup_s = 20, .measure_s = 300, .seed = 1});
    ASSERT_TRUE(pts.ok());
    auto v = compute_pfi(*pts, 0.002);
    ASSERT_TRUE(v.ok()) << w;
    pfi[w] = *v;
    std::printf("[calib] h200 %s: simulated PFI %.2f (uncapped %.0f W/GPU)\n", w, *v,
                pts->back().power_w / 8);
  }
  EXPECT_LT(pfi["dense-pt"], pfi["moe-pt"]);
  EXPECT_LT(pfi["moe-pt"], pfi["moe-ft"]);
  EXPECT_GE(pfi["dense-pt"], 1.10);
  EXPECT_LE(pfi["dense-pt"], 1.52);
  EXPECT_GE(pfi["moe-pt"], 1.24);
  EXPECT_LE(pfi["moe-pt"], 1.57);
  EXPECT_GE(pfi["moe-ft"], 1.79);
  EXPECT_LE(pfi["moe-ft"], 2.67);
}

}  // namespace
}  // namespace fw::sim

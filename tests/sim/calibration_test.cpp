// Calibration of the simulator against published figures. Each test states its source
// (docs/sources.md section) and tolerance; the figures measured are printed.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "analysis/pfi.hpp"
#include "analysis/steps_violating.hpp"
#include "core/csv.hpp"
#include "sim/fit.hpp"
#include "sim/sweep.hpp"
#include "sim_test_util.hpp"

namespace fw::sim {
namespace {
using testing::load_or_die;
using testing::mean;
using testing::run_scenario;

// §1a [2nd] (Curcio, arXiv 2608.11226, as summarised in docs/sources.md §1a): GRPO-7B
// on one A100, uncontrolled (group size 8), 500 steps: 216 of 500 steps over the 314.6 W budget
// (43 %), 1,731,712 tokens (3.46k per step), 1.777 kWh (mean ≈ 230 W over ~55 s steps).
// Published tolerance used here: mean 230 ± 15 W, step 55 ± 8 s, 3.5k ± 0.5k tokens per step,
// 43 ± 10 % of steps violating (analysis/steps_violating.hpp: the trailing 30 s mean crosses the
// budget at a sample inside the step), over 500 simulated steps of the shipped scenario's knobs.
struct Grpo7bFigures {
  double mean_w = 0, step_s = 0, tokens_per_step = 0, steps_violating = 0;
};
Grpo7bFigures grpo7b_uncontrolled(uint64_t seed) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml");
  auto plant = make_cluster(s, seed);
  StepViolationCounter counter(314.6, 30);
  Snapshot snap;
  double sum_w = 0;
  int64_t n = 0;
  for (int64_t k = 1; k * s.sample_period_s <= 27500; ++k) {  // ≈ 500 steps
    const double t = static_cast<double>(k) * s.sample_period_s;
    EXPECT_TRUE(plant->read(t, snap).ok());
    sum_w += snap.gpus[0].power_w;
    ++n;
    counter.add(t, snap.gpus[0].power_w, snap.jobs[0].steps_total);
  }
  const auto& job = snap.jobs[0];
  return {sum_w / static_cast<double>(n), snap.time_s / job.steps_total,
          job.tokens_total / job.steps_total, counter.stats().share()};
}

// Calibration seeds (DESIGN.md "Seeds"): the simulator is fitted to the published figures on
// 1000001-1000002, never on the evaluation seeds 1..N that the results use.
constexpr uint64_t kCalibrationSeeds[] = {1000001, 1000002};

TEST(Calibration, Grpo7bUncontrolledMatchesPublishedTrajectory) {
  for (uint64_t seed : kCalibrationSeeds) {
    const Grpo7bFigures f = grpo7b_uncontrolled(seed);
    std::printf(
        "[calib] grpo-7b seed %llu: mean %.1f W, step %.1f s, tokens/step %.0f, steps "
        "violating %.3f\n",
        static_cast<unsigned long long>(seed), f.mean_w, f.step_s, f.tokens_per_step,
        f.steps_violating);
    EXPECT_NEAR(f.mean_w, 230, 15);
    EXPECT_NEAR(f.step_s, 55, 8);
    EXPECT_NEAR(f.tokens_per_step, 3500, 500);
  }
}

// Same source: "uncontrolled exceeds the budget often" means, at the budget's 30 s window,
// 216 of 500 steps (43 %); checked on 500 steps, and the shipped 1800 s scenario breaks it in
// at least one tumbling 30 s window.
TEST(Calibration, Grpo7bUncontrolledExceedsBudgetOften) {
  // One seed's 500 steps spread widely (0.34-0.53 over calibration seeds 1000001-1000008), so
  // the published 43 % is checked on their mean (±5 points), each seed within ±15 points.
  double sum = 0;
  const int n = 8;
  for (uint64_t seed = kCalibrationSeeds[0]; seed < kCalibrationSeeds[0] + n; ++seed) {
    const double v = grpo7b_uncontrolled(seed).steps_violating;
    EXPECT_NEAR(v, 0.43, 0.15) << "seed " << seed;
    sum += v;
  }
  EXPECT_NEAR(sum / n, 0.43, 0.05);
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml");
  const auto run = run_scenario(s, kCalibrationSeeds[0], s.duration_s);
  double worst = 0;
  for (size_t k = 0; k + 60 <= run.samples.size(); k += 60) {
    double m = 0;
    for (size_t q = k; q < k + 60; ++q) m += run.samples[q].gpus[0].power_w / 60;
    worst = std::max(worst, m);
  }
  std::printf("[calib] grpo-7b shipped scenario: worst tumbling 30 s mean %.1f W\n", worst);
  EXPECT_GT(worst, 314.6);
}

// §2.4 [primary data]: A100-80GB vLLM decode-dominated 280–305 W, prefill spikes 440–520 W in
// single 250 ms samples. Simulated: GRPO-7B generation held at 64 concurrent sequences (1024 per
// step, so that occupancy stays at the concurrency as in steady serving).
TEST(Calibration, A100DecodePowerAndPrefillSpikes) {
  const Scenario s = load_or_die("scenarios/grpo-7b-a100.yaml",
                                 {"jobs.0.prompts_per_step=64", "jobs.0.group_size=16",
                                  "jobs.0.gen_concurrency=64", "sim.noise_w=0"});
  const auto run = run_scenario(s, kCalibrationSeeds[0], 600);
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
  const auto run = run_scenario(s, kCalibrationSeeds[0], 400);
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
  auto plant = make_cluster(s, kCalibrationSeeds[0]);
  Snapshot snap;
  const double start = s.jobs[0].start_s;
  ASSERT_TRUE(plant->read(start - 1, snap).ok());
  const double before = snap.gpus[0].power_w;
  double t10 = -1, t90 = -1, inst_at = -1, after = 0;
  ASSERT_TRUE(plant->read(start + 3, snap).ok());
  after = plant->true_power_w(0);
  auto plant2 = make_cluster(s, kCalibrationSeeds[0]);
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

// Realised power per GPU of each row, by cap (the file's `power per GPU` column).
std::map<std::string, std::vector<double>> read_a100_power_per_gpu() {
  std::map<std::string, std::vector<double>> out;
  auto r = CsvReader::open(testing::source_path("data/a100_power_cap_sweep.csv"));
  EXPECT_TRUE(r.ok());
  if (!r.ok()) return out;
  (*r)->next();  // header
  while ((*r)->next()) {
    double w = 0;
    parse_double((*r)->fields()[5], w);
    out[std::string((*r)->fields()[0])].push_back(w);
  }
  return out;
}

std::string a100_job_yaml(const std::string& workload) {
  return "name: a100-sweep\ngpus: [{model: a100-sxm4-80gb, count: 8}]\n"
         "budget: {watts: 3200, scope: node}\nsim: {noise_w: 0}\n"
         "jobs: [{kind: pretrain, workload: " +
         workload +
         ", gpus: 8, tokens_per_iter: 1000, duty: {every_s: 0}, "
         "hetero: {offset_sd: 0, noise_sd: 0}}]\n";
}

// Throughput in these sweeps is counted in whole iterations: about 200 in a 300 s window on
// H200, so one iteration is 0.5 % and a smaller drop is below what the window measures. The
// PFI leaves such points out as "T = T_max", as `flexwatt sweep` does (studies/sweep.hpp
// kPfiMinRelDrop, the same 0.005).
constexpr double kMinMeasurableDrop = 0.005;

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
    auto pts =
        sweep_caps(*s, 0, caps, {.warmup_s = 20, .measure_s = 300, .seed = kCalibrationSeeds[0]});
    ASSERT_TRUE(pts.ok());
    auto sim = compute_pfi(*pts, kMinMeasurableDrop);
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
         workload +
         ", gpus: 8, tokens_per_iter: 1000, duty: {every_s: 0}, "
         "hetero: {offset_sd: 0, noise_sd: 0}}]\n";
}

// §1b [primary]: H200 PFI, caps 200–700 W in 100 W steps. Group medians dense 1.27, MoE PT
// 1.43, MoE FT 2.10; per-job ranges dense 1.10–1.52, MoE PT 1.24–1.57, MoE FT 1.79–2.67.
TEST(Calibration, H200PfiOrderingAndRanges) {
  const std::vector<double> caps = {200, 300, 400, 500, 600, 700};
  std::map<std::string, double> pfi;
  for (const char* w : {"dense-pt", "moe-pt", "moe-ft"}) {
    auto s = parse_scenario(h200_job_yaml(w), "h200-sweep", {});
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto pts =
        sweep_caps(*s, 0, caps, {.warmup_s = 20, .measure_s = 300, .seed = kCalibrationSeeds[0]});
    ASSERT_TRUE(pts.ok());
    auto v = compute_pfi(*pts, kMinMeasurableDrop);
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

// ---- Firmware (data/a100_power_cap_sweep.csv, Emerald demo [primary data]) ----------------
// Measured: at binding caps the realised power settles 2–4 % below the cap (fine-tuning 8 %
// below at its first binding cap, 350 W), never above it from 200 W up, and reaches ~100 W at the
// 100 W minimum cap. Simulated: at least 1 % below and within 3 points of the measured margin. The
// shipped A100 presets (fitted with `flexwatt fit`) reproduce every row's P/P_max and T/T_max
// within ±0.03.
TEST(Calibration, A100FirmwareSettlesBelowCapAndReachesMinCap) {
  const auto rows = read_a100_sweep();
  const auto per_gpu = read_a100_power_per_gpu();
  const GpuPreset& gpu = *find_gpu_preset("a100-sxm4-80gb");
  SimParams sim;
  sim.noise_w = 0;
  for (const auto& [row, workload] : std::vector<std::pair<std::string, std::string>>{
           {"pt_mpt_13b_lg", "mpt-13b-pt"}, {"ft_llama_8b_dolly", "llama-8b-ft"}}) {
    const auto& meas = rows.at(row);
    std::vector<double> caps;
    for (const auto& p : meas) caps.push_back(p.cap_w);
    const auto pts = simulate_sweep(gpu, *find_pretrain_model(workload), caps, sim);
    const std::vector<double>& ppg = per_gpu.at(row);  // measured W per GPU, same order
    const double pmax_m = ppg.back(), tmax_m = meas.back().throughput;
    for (size_t i = 0; i < pts.size(); ++i) {
      const double p_sim = pts[i].power_w / pts.back().power_w;
      const double t_sim = pts[i].throughput / pts.back().throughput;
      const double p_meas = ppg[i] / pmax_m, t_meas = meas[i].throughput / tmax_m;
      std::printf(
          "[calib] %s cap %3.0f: P %.1f W (P/cap %.3f), P/Pmax %.3f vs %.3f, T/Tmax %.3f "
          "vs %.3f\n",
          workload.c_str(), caps[i], pts[i].power_w, pts[i].power_w / caps[i], p_sim, p_meas, t_sim,
          t_meas);
      EXPECT_LE(pts[i].power_w, caps[i]) << workload << " cap " << caps[i];
      EXPECT_NEAR(p_sim, p_meas, 0.03) << workload << " cap " << caps[i];
      EXPECT_NEAR(t_sim, t_meas, 0.03) << workload << " cap " << caps[i];
      if (caps[i] >= 200 && caps[i] <= 350) {  // binding: settles below, as measured
        const double below_meas = 1 - ppg[i] / caps[i];
        const double below_sim = 1 - pts[i].power_w / caps[i];
        EXPECT_GE(below_sim, 0.01) << workload << " cap " << caps[i];
        EXPECT_NEAR(below_sim, below_meas, 0.03) << workload << " cap " << caps[i];
      }
    }
    EXPECT_GE(pts.front().power_w, 90);  // the 100 W minimum cap is reachable and used
  }
}

// ---- Duty cycle and heterogeneity (public 8×H100 training log, docs/simulator.md) ---------
// grantwilkins/training_profile h100-traces/power-trace_2025-07-26-23-32-09.csv [primary data]:
// ~40 s of training at 545–559 W per GPU, then ~17 s near 150 W; steady per-GPU means spread
// sd 0.8 %; within-GPU sd ≈ 12 W. The pretraining defaults reproduce these.
TEST(Calibration, PretrainDutyCycleAndGpuSpreadDefaults) {
  const Scenario s = load_or_die("scenarios/pretrain-dense-h100x8.yaml");
  const auto run = run_scenario(s, kCalibrationSeeds[0], 1200);
  double low_t = 0, low_w = 0, n = 0;
  std::vector<double> gpu_mean(8, 0.0), sq(8, 0.0);
  double nt = 0;
  for (const auto& snap : run.samples) {
    if (snap.time_s < 40) continue;
    n += 1;
    if (snap.jobs[0].phase == Phase::kCheckpoint) {
      low_t += 1;
      low_w += snap.gpus[0].power_w;
      continue;
    }
    nt += 1;
    for (int g = 0; g < 8; ++g) gpu_mean[g] += snap.gpus[g].power_w;
  }
  for (double& m : gpu_mean) m /= nt;
  const double share_low = low_t / n;
  const double mean_all = mean(gpu_mean);
  double var = 0;
  for (double m : gpu_mean) var += (m - mean_all) * (m - mean_all) / 7;
  const double spread = std::sqrt(var) / mean_all;
  std::printf("[calib] dense-pt h100 defaults: low-phase share %.3f at %.1f W, GPU spread %.4f\n",
              share_low, low_w / low_t, spread);
  EXPECT_NEAR(share_low, 17.0 / 57.0, 0.07);
  EXPECT_NEAR(low_w / low_t, 150, 15);
  EXPECT_GE(spread, 0.002);
  EXPECT_LE(spread, 0.02);
}

}  // namespace
}  // namespace fw::sim

// Pipeline-parallel jobs in the simulator (sim/pipeline_job.hpp): the critical path, blocking
// at a stated power, data-parallel pipelines meeting at the all-reduce, stragglers; and the
// validation against the Perseus artifact's measured Zeus runs (sim/pipeline_fit.hpp), every
// row printed.

#include "sim/pipeline_job.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "pipeline/one_f_one_b.hpp"
#include "sim/pipeline_fit.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim {
namespace {

PipelineJobSpec balanced(int stages, int mb, int dp) {
  PipelineJobSpec s;
  s.gpu = find_gpu_preset("a100-pcie-80gb");
  s.microbatches = mb;
  s.dp = dp;
  s.load = {0.8, 0.3, 0.9};
  s.blocking_w = 80;
  s.average_over_iteration = false;
  for (int i = 0; i < stages; ++i) s.stages.push_back({1.0, 2.0});
  return s;
}

TEST(PipelineJob, UncappedBalancedPipelineByHand) {
  const auto s = balanced(4, 6, 1);
  const double p1 = gpu_power_w(*s.gpu, s.load, 1.0);
  ASSERT_LT(p1, s.gpu->max_cap_w * (1 - s.margin_frac));  // uncapped at the max cap
  std::vector<double> caps(4, s.gpu->max_cap_w);
  auto it = pipeline_iteration(s, caps);
  ASSERT_TRUE(it.ok()) << it.status().message();
  // (S - 1 + N)(F + B) = 9 * 3; each GPU computes N (F + B) = 18 s and blocks 9 s.
  EXPECT_NEAR(it->time_s, 27, 1e-9);
  EXPECT_NEAR(it->energy_j, 4 * (18 * p1 + 9 * 80), 1e-6);
  for (double x : it->clock_x) EXPECT_DOUBLE_EQ(x, 1.0);
}

TEST(PipelineJob, AFastPipelineWaitsAtBlockingPowerForTheStraggler) {
  auto s = balanced(2, 4, 2);
  s.stragglers.push_back({1, 1.5, 100, 200});
  std::vector<double> caps(4, s.gpu->max_cap_w);
  const double p1 = gpu_power_w(*s.gpu, s.load, 1.0);
  auto before = pipeline_iteration(s, caps, 50);  // the straggler has not started
  ASSERT_TRUE(before.ok());
  EXPECT_NEAR(before->time_s, 15, 1e-9);  // (2 - 1 + 4) * 3
  auto during = pipeline_iteration(s, caps, 150);
  ASSERT_TRUE(during.ok());
  EXPECT_NEAR(during->pipeline_time_s[0], 15, 1e-9);
  EXPECT_NEAR(during->pipeline_time_s[1], 22.5, 1e-9);
  EXPECT_NEAR(during->time_s, 22.5, 1e-9);
  // pipeline 0: 2 GPUs x (12 s compute + 10.5 s blocking); pipeline 1: 2 x (18 s + 4.5 s)
  EXPECT_NEAR(during->energy_j, 2 * (12 * p1 + 10.5 * 80) + 2 * (18 * p1 + 4.5 * 80), 1e-6);
  auto after = pipeline_iteration(s, caps, 250);
  ASSERT_TRUE(after.ok());
  EXPECT_NEAR(after->time_s, 15, 1e-9);
}

TEST(PipelineJob, ACapSlowsItsStageAtTheClockItAllows) {
  auto s = balanced(2, 4, 1);
  std::vector<double> caps{s.gpu->max_cap_w, 150};
  auto it = pipeline_iteration(s, caps);
  ASSERT_TRUE(it.ok());
  EXPECT_DOUBLE_EQ(it->clock_x[0], 1.0);
  const double x = it->clock_x[1];
  EXPECT_LT(x, 1.0);
  EXPECT_NEAR(gpu_power_w(*s.gpu, s.load, x), 150 * (1 - s.margin_frac), 0.5);
  EXPECT_GT(it->time_s, 15);
}

TEST(PipelineJob, AveragingLetsAWaitingStageComputeAboveItsCap) {
  // An imbalanced pipeline: the light stage waits; with the cap on iteration-average power it
  // runs a higher clock than with the cap on compute power.
  auto s = balanced(2, 4, 1);
  s.stages[0] = {0.5, 1.0};
  std::vector<double> caps{200, s.gpu->max_cap_w};
  auto compute = pipeline_iteration(s, caps);
  s.average_over_iteration = true;
  auto average = pipeline_iteration(s, caps);
  ASSERT_TRUE(compute.ok() && average.ok());
  EXPECT_GT(average->clock_x[0], compute->clock_x[0]);
}

TEST(PipelineJob, RejectsAWrongNumberOfCaps) {
  auto s = balanced(2, 4, 2);
  std::vector<double> caps(3, 300);
  EXPECT_FALSE(pipeline_iteration(s, caps).ok());
}

// ---- Phase-resolved iterations (sim::PipelineRun) -----------------------------------------

// Runs `run` in windows of dt at constant rates (`it`'s) until `iterations` iterations ended;
// returns the energy of every GPU up to the end of that window and the end of the last one.
struct RunResult {
  double energy_j = 0, end_s = 0, window_end_s = 0;
};
RunResult run_iterations(PipelineRun& run, const PipelineIteration& it, int iterations, double dt) {
  const size_t n = it.op_slow.size();
  std::vector<double> e(n, 0.0), busy(n, 0.0);
  RunResult r;
  int done = 0;
  double t = 0;
  for (int w = 0; done < iterations && w < 10000000; ++w) {
    done += run.advance(t, dt, it.op_slow, it.compute_w, e, busy);
    t += dt;
  }
  for (double x : e) r.energy_j += x;
  r.end_s = run.iteration_start_s();
  r.window_end_s = t;
  return r;
}

// At constant caps the phase-resolved run is the iteration model op by op: the same iteration
// time and the same energy per iteration (the brief's ~0.1 %; exact up to the last window).
TEST(PipelineJob, PhaseResolvedRunMatchesTheIterationModelAtConstantCaps) {
  struct Case {
    const char* name;
    PipelineJobSpec spec;
    std::vector<double> caps;
  };
  std::vector<Case> cases;
  {
    auto s = balanced(4, 6, 1);
    cases.push_back({"balanced uncapped", s, std::vector<double>(4, s.gpu->max_cap_w)});
  }
  {
    auto s = balanced(4, 8, 2);
    s.stages = {{1.0, 2.0}, {0.6, 1.2}, {0.8, 1.6}, {0.5, 1.0}};
    s.average_over_iteration = true;
    s.stragglers.push_back({1, 1.3, 0, 1e300});  // in force the whole run
    cases.push_back(
        {"imbalanced, averaging, straggler", s, {300, 200, 250, 180, 300, 300, 220, 170}});
  }
  {
    auto s = balanced(3, 12, 1);
    s.stages = {{0.3, 0.6}, {0.2, 0.4}, {0.25, 0.5}};
    s.cap_response = {{150, 200, 300}, {0.5, 0.8, 1.0}, 280};
    cases.push_back({"measured cap response", s, {300, 170, 230}});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto it = pipeline_iteration(c.spec, c.caps, 0);
    ASSERT_TRUE(it.ok()) << it.status().message();
    PipelineRun run(c.spec);
    const int k = 40;
    const double dt = 0.01;
    const RunResult r = run_iterations(run, *it, k, dt);
    EXPECT_NEAR(r.end_s, k * it->time_s, 1e-9 * k * it->time_s);
    // Energy up to the window's end: k iterations and the next one's first < dt.
    double max_w = 0;
    for (double w : it->compute_w) max_w = std::max(max_w, w);
    const double tail = (r.window_end_s - r.end_s) * max_w * static_cast<double>(c.caps.size());
    EXPECT_NEAR(r.energy_j, k * it->energy_j, tail + 1e-9 * r.energy_j);
    EXPECT_NEAR(r.energy_j / (k * it->energy_j), 1.0, 1e-3);
  }
}

// Each rank reports the phase of the op it runs or waits for, from the 1F1B schedule: stage s
// runs min(S − 1 − s, N) warm-up forwards, then steady pairs, then cool-down backwards; the
// last stage has no warm-up.
TEST(PipelineJob, RanksReportTheirOneFOneBPhase) {
  auto s = balanced(4, 8, 1);  // ops F = 1 s, B = 2 s at f_max
  std::vector<double> caps(4, s.gpu->max_cap_w);
  auto it = pipeline_iteration(s, caps, 0);
  ASSERT_TRUE(it.ok());
  PipelineRun run(s);
  std::vector<double> e(4), busy(4);
  int w = 0;  // windows of 0.1 s run
  auto at = [&](double t_end) {
    for (; (w + 1) * 0.1 <= t_end + 1e-9; ++w)
      run.advance(w * 0.1, 0.1, it->op_slow, it->compute_w, e, busy);
  };
  ASSERT_NEAR(it->time_s, 33, 1e-9);  // (S − 1 + N)(F + B)
  at(0.5);  // stage 0 runs its first forward (fill); stage 3 waits for its first (steady) one
  EXPECT_EQ(run.phase(0), RankPhase::kWarmup);
  EXPECT_EQ(run.phase(1), RankPhase::kWarmup);
  EXPECT_EQ(run.phase(3), RankPhase::kSteady);
  at(2.5);  // stage 2 runs its one warm-up forward (2–3 s)
  EXPECT_EQ(run.phase(0), RankPhase::kWarmup);
  EXPECT_EQ(run.phase(2), RankPhase::kWarmup);
  at(3.5);  // stage 0: three warm-up forwards (0–3 s), then its first steady forward
  EXPECT_EQ(run.phase(0), RankPhase::kSteady);
  EXPECT_EQ(run.phase(2), RankPhase::kSteady);
  at(32.5);  // the last backward of stage 0 (drain, 31–33 s); stage 3 ended at 27 s
  EXPECT_EQ(run.phase(0), RankPhase::kCooldown);
  EXPECT_EQ(run.phase(3), RankPhase::kCooldown);
  EXPECT_DOUBLE_EQ(run.iteration_start_s(), 0);
  at(33.5);
  EXPECT_NEAR(run.iteration_start_s(), 33, 1e-9);
  EXPECT_EQ(run.phase(0), RankPhase::kWarmup);
}

// A GPU's clock follows its cap per phase: the first stage 1.5× slower only while it is in
// warm-up (switched at the window where it reports steady) gives the critical path of the 1F1B
// DAG with only its warm-up forwards 1.5× longer. Times are binary fractions (exact).
TEST(PipelineJob, ARatePerPhaseSlowsThatPhaseOnly) {
  auto s = balanced(4, 8, 1);
  for (auto& st : s.stages) st = {0.0625, 0.125};
  PipelineRun run(s);
  std::vector<double> e(4), busy(4), slow(4, 1.0), power(4, 200.0);
  const double dt = 0.03125;  // the warm-up forwards end at 3 · 0.09375 = 9 windows
  int done = 0;
  bool switched = false;
  for (int w = 0; done < 1 && w < 100000; ++w) {
    const bool warm = run.phase(0) == RankPhase::kWarmup;
    if (!warm && !switched) {
      switched = true;
      EXPECT_DOUBLE_EQ(w * dt, 3 * 0.09375);  // the phase report at the boundary
    }
    slow[0] = warm && !switched ? 1.5 : 1.0;
    done += run.advance(w * dt, dt, slow, power, e, busy);
  }
  const pipeline::OneFOneB dag(4, 8);
  pipeline::OpDurations d(4);
  for (int st = 0; st < 4; ++st) {
    for (int p = 0; p < pipeline::kPhases; ++p) {
      const bool warm = st == 0 && (p == 0 || p == 1);  // fill and warm-up forwards
      d[st][0][p] = 0.0625 * (warm ? 1.5 : 1.0);
      d[st][1][p] = 0.125;
    }
  }
  std::vector<double> scratch;
  const double want = dag.iteration_time(d, scratch);
  EXPECT_GT(want, 11 * 0.1875);  // the warm-up forwards are on the fill path
  EXPECT_NEAR(run.iteration_start_s(), want, 1e-12);
}

TEST(PipelineJob, MeasuredCapResponseByHand) {
  CapResponse r{{150, 200, 300}, {0.5, 0.8, 1.0}, 280};
  EXPECT_NEAR(r.speed_at(250), 0.9, 1e-12);
  EXPECT_NEAR(r.speed_at(175), 0.65, 1e-12);
  EXPECT_NEAR(r.speed_at(100), 0.2, 1e-12);  // extrapolated from 150 and 200 W
  EXPECT_NEAR(r.speed_at(10), 0.05, 1e-12);  // floor
  EXPECT_EQ(r.speed_at(350), 1.0);
  EXPECT_NEAR(r.compute_w(200, 0.015), 197, 1e-9);
  EXPECT_EQ(r.compute_w(300, 0.015), 280);  // the cap does not bind
  // Two balanced stages, 4 micro-batches, both at 200 W: T = 3 · (2 + 3) / 0.8; each GPU
  // computes 4 · 3 / 0.8 = 15 s at 197 W and waits 3.75 s at 80 W. The load is not used.
  PipelineJobSpec s = balanced(2, 4, 1);
  s.load = {9, 9, 0.01};
  s.cap_response = r;
  std::vector<double> caps{200, 200};
  auto it = pipeline_iteration(s, caps);
  ASSERT_TRUE(it.ok());
  EXPECT_NEAR(it->time_s, 18.75, 1e-9);
  EXPECT_NEAR(it->energy_j, 2 * (197 * 15 + 80 * 3.75), 1e-6);
  EXPECT_NEAR(it->clock_x[0], 0.8, 1e-12);
}

// Fit each model's uniform-limit runs, predict its per-stage-limit runs; print every row.
void validate(const char* gpu_key, const char* preset, double blocking_w, int* within, int* rows,
              double* global_max, PipelineModel model = PipelineModel::kGpuModel,
              int* split_within = nullptr, int* fits_within_3pct = nullptr) {
  const bool diagnose = split_within != nullptr;
  const std::string dir = std::string(FLEXWATT_SOURCE_DIR) + "/data/perseus/";
  auto global = read_zeus_csv(dir + gpu_key + "_zeus_global.csv");
  auto local = read_zeus_csv(dir + gpu_key + "_zeus_local.csv");
  ASSERT_TRUE(global.ok()) << global.status().message();
  ASSERT_TRUE(local.ok()) << local.status().message();
  auto v = validate_pipeline_runs(*global, *local, *find_gpu_preset(preset), blocking_w, model,
                                  diagnose);
  ASSERT_TRUE(v.ok()) << v.status().message();
  *global_max = 0;
  for (const auto& f : v->fits) {
    std::printf(
        "fit %s %s %s: t_unit %.5f s, imbalance %.2f, u %.3f m %.3f c %.3f, "
        "uniform runs max |err| %.1f %%\n",
        gpu_key, f.model.c_str(), f.partition.c_str(), f.t_unit_s, f.imbalance, f.load.u, f.load.m,
        f.load.c, 100 * f.max_err);
    *global_max = std::max(*global_max, f.max_err);
    if (fits_within_3pct) *fits_within_3pct += f.max_err <= 0.03;
  }
  *within = 0;
  *rows = static_cast<int>(v->rows.size());
  for (const auto& r : v->rows) {
    std::string caps;
    for (double c : r.run.caps_w) caps += std::to_string(static_cast<int>(c)) + " ";
    std::printf(
        "%s %-17s %-20.20s caps %s time %.2f vs %.2f s (%+.1f %%), energy %.0f vs %.0f J "
        "(%+.1f %%)\n",
        gpu_key, r.run.model.c_str(), r.run.partition.c_str(), caps.c_str(), r.time_s, r.run.time_s,
        100 * r.time_err(), r.energy_j, r.run.energy_j, 100 * r.energy_err());
    EXPECT_TRUE(std::isfinite(r.time_err()) && std::isfinite(r.energy_err()));
    *within += std::abs(r.time_err()) <= 0.05 && std::abs(r.energy_err()) <= 0.05;
    if (split_within && std::isfinite(r.split_time_s)) {
      *split_within += std::abs(r.split_time_s / r.run.time_s - 1) <= 0.05 &&
                       std::abs(r.split_energy_j / r.run.energy_j - 1) <= 0.05;
    }
  }
  std::printf("%s: %d of %d per-stage-limit rows within +-5 %% in both time and energy\n", gpu_key,
              *within, *rows);
}

TEST(PipelineJob, PredictsTheMeasuredPerStageLimitRuns) {
  // Measured (docs/simulator.md "Pipeline jobs"): the ±5 % target per row is NOT met. These
  // bounds hold the figures measured when the model was written, so a change that makes the
  // fit worse fails here.
  int within = 0, rows = 0;
  double global_max = 0;
  validate("A100", "a100-pcie-80gb", 83.64, &within, &rows, &global_max);
  EXPECT_EQ(rows, 35);
  EXPECT_LE(global_max, 0.07);
  EXPECT_GE(within, 14);
  validate("A40", "a40", 70.38, &within, &rows, &global_max);
  EXPECT_EQ(rows, 47);
  EXPECT_GE(within, 3);
}

// The uniform-limit runs themselves: the GPU model's clock for a cap (assumed A40 and
// A100-PCIe constants) reproduces them within 3.7-6.5 % (A100) and 12.5-29.0 % (A40), no fit
// within 3 %. The cap response measured on them was required to bring every fit within 3 %;
// measured: 8 of 11 (A40 bert 3.1 %, gpt3-6.7b 5.5 %, t5-3b 11.1 %, whose measured time falls
// as the cap falls from 300 to 200 W). The bounds hold that: >= 8 within 3 %, all within 12 %.
// Then the per-stage-limit runs:
TEST(PipelineJob, PredictsThePerStageLimitRunsFromTheMeasuredCapResponse) {
  // Measured (docs/simulator.md "Validation"): the ±5 % target per row is NOT met; the
  // bounds hold the figures measured with this model (a regression guard, not the target),
  // and the work-split diagnostic's, which shows the physics other than the work split.
  int within = 0, rows = 0, split = 0, fits = 0;
  double global_max = 0, max_fit = 0;
  // The diagnostic runs on the 4-stage A100 models only (the 8-stage A40 one takes a minute:
  // `flexwatt pipeline validate` prints it).
  validate("A100", "a100-pcie-80gb", 83.64, &within, &rows, &global_max,
           PipelineModel::kCapResponse, &split, &fits);
  max_fit = global_max;
  EXPECT_EQ(rows, 35);
  EXPECT_GE(within, 2);
  EXPECT_GE(split, 28);  // of the 29 rows of the fitted partitions
  validate("A40", "a40", 70.38, &within, &rows, &global_max, PipelineModel::kCapResponse, nullptr,
           &fits);
  max_fit = std::max(max_fit, global_max);
  EXPECT_EQ(rows, 47);
  EXPECT_GE(within, 10);
  EXPECT_GE(fits, 8);
  EXPECT_LE(max_fit, 0.12);
}

}  // namespace
}  // namespace fw::sim

#include "analysis/trace_analysis.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("fw_analysis_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Writes gpus.csv rows "time_s,gpu,power_w,energy_j" (energy empty when NaN), full precision.
struct Row {
  double t;
  int gpu;
  double p;
  double e = kUnset;
};
void write_gpus(const fs::path& file, const std::vector<Row>& rows) {
  std::ofstream f(file);
  f.precision(17);
  f << "time_s,gpu,power_w,energy_j\n";
  for (const Row& r : rows) {
    f << r.t << "," << r.gpu << "," << r.p << ",";
    if (!std::isnan(r.e)) f << r.e;
    f << "\n";
  }
}

AnalysisOptions opts(double budget_w, BudgetScope scope, std::vector<double> windows) {
  AnalysisOptions o;
  o.budget_w = budget_w;
  o.scope = scope;
  o.windows_s = std::move(windows);
  return o;
}

// Two GPUs, square waves 10 s high / 10 s low at 0.5 s: GPU 0 400/200 W, GPU 1 in phase
// 300/100 W. Node = 700/300 W.
std::vector<Row> square_rows(double total_s) {
  std::vector<Row> rows;
  for (int i = 0; i * 0.5 < total_s; ++i) {
    const double t = i * 0.5;
    const bool high = std::fmod(t, 20.0) < 10.0;
    rows.push_back({t, 0, high ? 400.0 : 200.0});
    rows.push_back({t, 1, high ? 300.0 : 100.0});
  }
  return rows;
}

TEST(TraceAnalysis, SquareWaveNodeScope) {
  const fs::path d = temp_dir("sq_node");
  write_gpus(d / "gpus.csv", square_rows(600));
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {0.5, 10, 20, 30, 300}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const SeriesSummary& n = r->node;
  EXPECT_EQ(r->format, "flexwatt trace directory");
  EXPECT_EQ(n.samples, 1200);
  EXPECT_EQ(n.windows[0].violation_rate, 0.5);  // 0.5 s: pure 700 or 300
  EXPECT_EQ(n.windows[1].violation_rate, 0.5);  // 10 s: pure
  EXPECT_EQ(n.windows[2].violation_rate, 0.0);  // 20 s: mean exactly 500, not above
  EXPECT_EQ(n.windows[3].violation_rate, 0.5);  // 30 s: 20 high + 10 low, then 10 + 20
  EXPECT_EQ(n.windows[3].windows, 20);
  EXPECT_EQ(n.windows[4].violation_rate, 0.0);
  EXPECT_EQ(n.windows[1].peak_mean_w, 700);
  EXPECT_EQ(n.windows[1].energy_over_budget_j, 30 * 200.0 * 10);
  EXPECT_EQ(n.peak_power_w, 700);
  EXPECT_TRUE(std::isnan(r->gpus[0].budget_w));  // scope node: GPUs not judged
  EXPECT_EQ(r->gpus[0].windows[1].violations, 0);
  EXPECT_EQ(r->gpus[0].windows[1].peak_mean_w, 400);
  EXPECT_EQ(r->incomplete_ticks, 0);
}

TEST(TraceAnalysis, SquareWaveGpuScope) {
  const fs::path d = temp_dir("sq_gpu");
  write_gpus(d / "gpus.csv", square_rows(600));
  auto r = analyze_trace((d / "gpus.csv").string(), opts(250, BudgetScope::kGpu, {0.5, 10, 30}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "flexwatt gpus.csv");
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].windows[0].violation_rate, 0.5);  // 400 > 250 half the time
  EXPECT_EQ(r->gpus[0].windows[2].violation_rate, 1.0);  // 30 s means 333.3 and 266.7
  EXPECT_EQ(r->gpus[1].windows[0].violation_rate, 0.5);  // 300 > 250
  EXPECT_EQ(r->gpus[1].windows[2].violation_rate, 0.0);  // 233.3 and 166.7, under 250
  EXPECT_TRUE(std::isnan(r->node.budget_w));
}

TEST(TraceAnalysis, EnergyMatchesClosedFormTrapezoid) {
  // p(t) = 100 + 2t over [0, 100] at 0.25 s: the trapezoid is exact for a line.
  // ∫ = 100·100 + 100² = 20000 J.
  const fs::path d = temp_dir("ramp");
  std::vector<Row> rows;
  for (int i = 0; i <= 400; ++i) rows.push_back({i * 0.25, 0, 100 + 2 * (i * 0.25)});
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(1000, BudgetScope::kNode, {10}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gpus[0].energy_source, "trapezoid");
  EXPECT_NEAR(r->gpus[0].energy_j, 20000, 1e-9);
  EXPECT_EQ(r->gpus[0].duration_s, 100);
  EXPECT_NEAR(r->gpus[0].mean_power_w, 200, 1e-12);
  EXPECT_EQ(r->gpus[0].peak_power_w, 300);
  EXPECT_NEAR(r->node.energy_j, 20000, 1e-9);
}

TEST(TraceAnalysis, EnergyMatchesClosedFormSine) {
  // p(t) = 500 + 100 sin(2πt/10) over 10 whole periods: ∫ = 500 · 100 = 50000 J.
  const fs::path d = temp_dir("sine");
  std::vector<Row> rows;
  for (int i = 0; i <= 10000; ++i) {
    const double t = i * 0.01;
    rows.push_back({t, 0, 500 + 100 * std::sin(2 * M_PI * t / 10)});
  }
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(1000, BudgetScope::kNode, {1}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NEAR(r->gpus[0].energy_j, 50000, 1e-6);
}

TEST(TraceAnalysis, EnergyFromCounterWhenEveryRowHasOne) {
  // Counter = ∫(100 + 2t) = 100t + t², power column deliberately off by 10 W: the counter wins.
  const fs::path d = temp_dir("counter");
  std::vector<Row> rows;
  for (int i = 0; i <= 40; ++i) {
    const double t = i * 0.5;
    rows.push_back({t, 0, 110 + 2 * t, 1000 + 100 * t + t * t});
  }
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(1000, BudgetScope::kNode, {5}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gpus[0].energy_source, "counter");
  EXPECT_DOUBLE_EQ(r->gpus[0].energy_j, 100 * 20 + 400);
  EXPECT_EQ(r->node.energy_source, "counter");

  rows[7].e = kUnset;  // one row without a counter: trapezoid, and it says so
  write_gpus(d / "gpus.csv", rows);
  r = analyze_trace(d.string(), opts(1000, BudgetScope::kNode, {5}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->gpus[0].energy_source, "trapezoid");
  EXPECT_DOUBLE_EQ(r->gpus[0].energy_j, 110 * 20 + 400);
}

TEST(TraceAnalysis, GapsAreCountedAndWindowsCountCoveredTimeOnly) {
  const fs::path d = temp_dir("gap");
  std::vector<Row> rows;
  for (int i = 0; i < 200; ++i) {
    if (i >= 40 && i < 60) continue;  // 20 ticks missing: step 10.5 s instead of 0.5 s
    rows.push_back({i * 0.5, 0, 300});
  }
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(250, BudgetScope::kGpu, {10}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const SeriesSummary& g = r->gpus[0];
  EXPECT_EQ(g.gaps, 1);
  EXPECT_DOUBLE_EQ(g.gap_s, 10.0);
  EXPECT_EQ(g.period_s, 0.5);
  EXPECT_DOUBLE_EQ(g.energy_j, 300 * 99.5);  // the trapezoid bridges the gap
  // 10 s windows: [0,10) and [10,20) full (the sample at 19.5 s holds one period only),
  // [20,30) uncovered (skipped), [30,40) ... [90,100) full.
  EXPECT_EQ(g.windows[0].windows, 9);
  EXPECT_EQ(g.windows[0].skipped, 1);
  EXPECT_EQ(g.windows[0].violation_rate, 1.0);
}

TEST(TraceAnalysis, DuplicatesKeepFirstAndAreCounted) {
  const fs::path d = temp_dir("dup");
  std::vector<Row> rows = square_rows(40);
  rows.insert(rows.begin() + 5, {rows[4].t, rows[4].gpu, 4999});  // same time, same GPU
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {10}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->duplicates, 1);
  EXPECT_EQ(r->gpus[0].duplicates, 1);
  EXPECT_EQ(r->gpus[0].peak_power_w, 400);  // the duplicate's value was dropped
  EXPECT_EQ(r->gpus[0].samples, 80);
}

TEST(TraceAnalysis, UnsortedRowsAreSortedAndReported) {
  const fs::path a = temp_dir("sorted"), b = temp_dir("gpu_major");
  std::vector<Row> rows = square_rows(100);
  write_gpus(a / "gpus.csv", rows);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& x, const Row& y) { return x.gpu < y.gpu; });
  write_gpus(b / "gpus.csv", rows);
  const auto o = opts(500, BudgetScope::kNode, {0.5, 10});
  auto ra = analyze_trace(a.string(), o);
  auto rb = analyze_trace(b.string(), o);
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->unsorted_rows, 0);
  EXPECT_FALSE(ra->sorted_in_memory);
  EXPECT_EQ(rb->unsorted_rows, 199);  // every row of GPU 1 but the last (t = 99.5 s, not earlier)
  EXPECT_TRUE(rb->sorted_in_memory);
  EXPECT_EQ(rb->node.samples, ra->node.samples);
  EXPECT_EQ(rb->node.windows[0].violation_rate, ra->node.windows[0].violation_rate);
  EXPECT_EQ(rb->node.windows[1].peak_mean_w, ra->node.windows[1].peak_mean_w);
  EXPECT_EQ(rb->node.energy_j, ra->node.energy_j);
}

TEST(TraceAnalysis, TimeGoingBackwardsForAGpuIsAnErrorWithFileLine) {
  const fs::path d = temp_dir("backwards");
  std::vector<Row> rows = square_rows(10);
  std::swap(rows[4], rows[6]);  // GPU 0 at t=1.5 then t=1.0 (lines 6 and 8)
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {1}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("gpus.csv:8: time_s: goes backwards for GPU 0"),
            std::string::npos)
      << r.status().message();
}

TEST(TraceAnalysis, BudgetMustBePositive) {
  const fs::path d = temp_dir("budget");
  write_gpus(d / "gpus.csv", square_rows(10));
  for (double b : {0.0, -5.0, std::numeric_limits<double>::infinity()}) {
    auto r = analyze_trace(d.string(), opts(b, BudgetScope::kNode, {1}));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().exit_code(), 2);
    EXPECT_NE(r.status().message().find("--budget-w"), std::string::npos);
  }
  auto r = analyze_trace(d.string(), opts(100, BudgetScope::kNode, {0}));
  EXPECT_FALSE(r.ok());
}

// NaN is "no budget given": nothing is judged, every series keeps its window means.
TEST(TraceAnalysis, NoBudgetJudgesNothingAndKeepsPeaks) {
  const fs::path d = temp_dir("nobudget");
  write_gpus(d / "gpus.csv", square_rows(10));
  for (BudgetScope scope : {BudgetScope::kNode, BudgetScope::kGpu}) {
    auto r = analyze_trace(d.string(), opts(kUnset, scope, {1}));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(std::isnan(r->node.budget_w));
    EXPECT_TRUE(std::isnan(r->gpus[0].budget_w));
    EXPECT_EQ(r->node.windows[0].violations, 0);
    EXPECT_GT(r->node.windows[0].windows, 0);
    EXPECT_DOUBLE_EQ(r->node.windows[0].peak_mean_w, 700);  // square_rows: node 700/300 W
    EXPECT_DOUBLE_EQ(r->gpus[0].windows[0].peak_mean_w, 400);
  }
}

TEST(TraceAnalysis, UnknownGpuIndexFromMetaIsAnErrorWithFileLine) {
  const fs::path d = temp_dir("meta_gpus");
  std::vector<Row> rows = square_rows(5);
  rows[5].gpu = 7;  // line 7
  write_gpus(d / "gpus.csv", rows);
  std::ofstream(d / "meta.json") << R"({"gpus": [0, 1]})";
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {1}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gpus.csv:7: gpu: unknown GPU index 7"), std::string::npos)
      << r.status().message();
}

TEST(TraceAnalysis, EmptyTraceIsAnError) {
  const fs::path d = temp_dir("norows");
  write_gpus(d / "gpus.csv", {});
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {1}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no data rows"), std::string::npos);
}

TEST(TraceAnalysis, TokensPerMwhFromJobs) {
  const fs::path d = temp_dir("tokens");
  std::vector<Row> rows;
  for (int i = 0; i <= 360; ++i) rows.push_back({i * 10.0, 0, 1000});  // 1000 W for 1 h
  write_gpus(d / "gpus.csv", rows);
  std::ofstream(d / "jobs.csv") << "time_s,job,phase,tokens_total\n"
                                   "0,0,generate,100\n0,1,generate,0\n"
                                   "3600,0,generate,1100\n3600,1,update,500\n";
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {60}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->tokens.has_value());
  EXPECT_EQ(*r->tokens, 1500);
  ASSERT_TRUE(r->tokens_per_mwh.has_value());
  EXPECT_NEAR(*r->tokens_per_mwh, 1500 / 0.001, 1e-6);  // 1 kWh = 0.001 MWh
}

TEST(TraceAnalysis, NodeHoldsAMissingGpuAndCountsTheTick) {
  const fs::path d = temp_dir("incomplete");
  std::vector<Row> rows = square_rows(10);
  rows.erase(rows.begin() + 9);  // GPU 1 missing at t = 2.0
  write_gpus(d / "gpus.csv", rows);
  auto r = analyze_trace(d.string(), opts(500, BudgetScope::kNode, {1}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->incomplete_ticks, 1);
  EXPECT_EQ(r->node.samples, 20);
  EXPECT_EQ(r->node.peak_power_w, 700);
}

TEST(TraceAnalysis, NameplateShare) {
  const fs::path d = temp_dir("nameplate");
  write_gpus(d / "gpus.csv", square_rows(40));
  AnalysisOptions o = opts(500, BudgetScope::kNode, {10});
  o.nameplate_w = 700;
  auto r = analyze_trace(d.string(), o);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->node.peak_share_of_nameplate(0), 700.0 / 1400.0);
  EXPECT_DOUBLE_EQ(r->gpus[0].peak_share_of_nameplate(0), 400.0 / 700.0);
}

TEST(TraceAnalysis, NvidiaSmiExampleWithEightGpus) {
  auto r = analyze_trace(std::string(FLEXWATT_SOURCE_DIR) + "/data/examples/nvsmi_8gpu.csv",
                         opts(600, BudgetScope::kGpu, {0.5, 1, 5}));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, "nvidia-smi csv log");
  ASSERT_EQ(r->gpus.size(), 8u);
  EXPECT_EQ(r->missing_power_rows, 1);  // the [N/A] power cell of GPU 3
  EXPECT_EQ(r->node.samples, 150);
  double energy = 0, mean = 0;
  for (const auto& g : r->gpus) {
    EXPECT_EQ(g.samples, g.gpu == 3 ? 149 : 150) << g.gpu;
    EXPECT_EQ(g.gaps, g.gpu == 3 ? 1 : 0) << g.gpu;
    EXPECT_NEAR(g.period_s, 0.1, 0.002);
    // The synthetic plateau is 530–575 W: peak inside it, idle ~70 W pulls the mean down.
    EXPECT_GT(g.peak_power_w, 530);
    EXPECT_LE(g.peak_power_w, 575);
    EXPECT_EQ(g.windows[0].violations, 0);  // budget 600 W per GPU is never broken
    energy += g.energy_j;
    mean += g.mean_power_w;
  }
  EXPECT_DOUBLE_EQ(r->node.energy_j, energy);
  // Energy is primary: the node mean is its energy over its duration (close to the sum of
  // the GPUs' own means, whose spans differ by the few ms of a query loop).
  EXPECT_DOUBLE_EQ(r->node.mean_power_w, r->node.energy_j / r->node.duration_s);
  EXPECT_NEAR(r->node.mean_power_w, mean, 1e-3 * mean);
  EXPECT_GT(r->node.peak_power_w, 8 * 530);
  EXPECT_EQ(r->incomplete_ticks, 1);
}

// Jobs from meta.json: job "a" on GPU 0, job "b" on GPU 1 (square_rows: 400/200 and
// 300/100 W, 10 s high / 10 s low). Scope job judges each job's sum; the node is not judged.
TEST(TraceAnalysis, JobSeriesFromMetaWithCurveAndWindowMeans) {
  const fs::path d = temp_dir("jobs_meta");
  write_gpus(d / "gpus.csv", square_rows(120));
  std::ofstream(d / "meta.json")
      << R"({"simulated": true, "gpu_models": ["a100-sxm4-80gb", "a100-sxm4-80gb"],)"
      << R"( "scenario": {"jobs": [{"name": "a", "gpus": [0]}, {"name": "b", "gpus": [1]}]}})";
  AnalysisOptions o = opts(250, BudgetScope::kJob, {20});
  auto r = analyze_trace(d.string(), o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->simulated);
  EXPECT_EQ(r->gpu_models.size(), 2u);
  ASSERT_EQ(r->jobs.size(), 2u);
  EXPECT_EQ(r->jobs[0].name, "a");
  EXPECT_EQ(r->jobs[1].gpu_count, 1);
  EXPECT_NEAR(r->jobs[0].mean_power_w, r->gpus[0].mean_power_w, 1e-9);
  // Job a: 10 s windows alternate 400 / 200 W against 250 W: half violate; 20 s windows
  // average 300 W: all violate. Job b (300 / 100 W): 10 s half violate, 20 s (200 W) none.
  ASSERT_EQ(r->jobs[0].curve.size(), kDefaultCurveWindowsS.size());
  const auto at = [](const SeriesSummary& s, double w) {
    for (const auto& x : s.curve) {
      if (x.window_s == w) return x;
    }
    return WindowStats{};
  };
  EXPECT_DOUBLE_EQ(at(r->jobs[0], 10).violation_rate, 0.5);
  EXPECT_DOUBLE_EQ(at(r->jobs[0], 30).violation_rate, 1.0);
  EXPECT_DOUBLE_EQ(at(r->jobs[1], 10).violation_rate, 0.5);
  EXPECT_DOUBLE_EQ(at(r->jobs[1], 60).violation_rate, 0.0);
  EXPECT_EQ(at(r->node, 10).violations, 0);  // not judged under scope job
  EXPECT_TRUE(std::isnan(r->node.budget_w));
  // Window means at the oversubscription window (30 s) of the node: 120 s → 4 windows.
  EXPECT_EQ(r->node.oversub_means.size(), 4u);
  EXPECT_EQ(r->jobs[0].oversub_means.size(), 4u);
  // The GPU series get no curve outside scope gpu.
  EXPECT_TRUE(r->gpus[0].curve.empty());
}

TEST(TraceAnalysis, ScopeJobWithoutAJobMapIsAnError) {
  const fs::path d = temp_dir("jobs_none");
  write_gpus(d / "gpus.csv", square_rows(20));
  auto r = analyze_trace((d / "gpus.csv").string(), opts(250, BudgetScope::kJob, {10}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--scope job"), std::string::npos);
}

TEST(TraceAnalysis, BadJobMapNamesTheField) {
  const fs::path d = temp_dir("jobs_bad");
  write_gpus(d / "gpus.csv", square_rows(20));
  std::ofstream(d / "meta.json") << R"({"jobs": [{"name": "a", "gpus": [-1]}]})";
  auto r = analyze_trace(d.string(), opts(250, BudgetScope::kNode, {10}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("jobs[0]: gpus"), std::string::npos);
}

}  // namespace
}  // namespace fw

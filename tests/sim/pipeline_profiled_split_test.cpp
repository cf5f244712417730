// The profiled work split of `flexwatt pipeline validate` (sim/stage_work_table.hpp,
// sim/pipeline_fit.hpp fit_profiled_runs): the shipped table parses, a malformed row is refused
// naming file:line:field, the measured split moves a prediction the way the work does, and rows
// with a cap outside the uniform runs' caps are flagged, not extrapolated.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/pipeline_fit.hpp"
#include "sim/stage_work_table.hpp"
#include "test_paths.hpp"  // FLEXWATT_SOURCE_DIR, FLEXWATT_BINARY_DIR

namespace fw::sim {
namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

TEST(StageWorkTable, ParsesTheShippedTable) {
  auto t = read_stage_work_csv(std::string(FLEXWATT_SOURCE_DIR) + "/data/perseus/stage_work.csv");
  ASSERT_TRUE(t.ok()) << t.status().message();
  int a100 = 0, a40 = 0;
  for (const auto& e : *t) {
    EXPECT_EQ(e.stages.size(), e.gpu == "A100" ? 4u : 8u) << e.model;
    for (const auto& w : e.stages) {
      EXPECT_GT(w.forward_s, 0.01);
      EXPECT_GT(w.backward_s, w.forward_s);  // backward is the larger pass on every stage
    }
    a100 += e.gpu == "A100";
    a40 += e.gpu == "A40";
  }
  EXPECT_EQ(a100, 5);
  EXPECT_EQ(a40, 5);  // gpt3-6.7b has no plan at the maximum clock on every rank
  // gpt3-xl on A100: the measured heaviest stage is 2 (the layer counts say 0 and 2).
  const StageWorkEntry* g = find_stage_work(*t, "A100", "gpt3-xl", "custom:0,8,14,21,27");
  ASSERT_NE(g, nullptr);
  for (int s : {0, 1, 3}) EXPECT_LT(g->stages[s].forward_s, g->stages[2].forward_s);
}

TEST(StageWorkTable, RejectsAMalformedRowNamingFileLineAndField) {
  const std::string head = "gpu,model,partition,stage,forward_s,backward_s\n";
  const std::string good = "A100,m,\"custom:0,1,2\",0,0.1,0.2\n";
  struct Case {
    const char* name;
    std::string text, want;
  };
  const Case cases[] = {
      {"bad_number.csv", head + good + "A100,m,\"custom:0,1,2\",1,x,0.2\n", ":3: forward_s"},
      {"negative.csv", head + good + "A100,m,\"custom:0,1,2\",1,0.1,-1\n", ":3: backward_s"},
      {"order.csv", head + good + "A100,m,\"custom:0,1,2\",2,0.1,0.2\n", ":3: stage"},
      {"repeat.csv", head + good + good, ":3: stage"},
      {"empty_model.csv", head + "A100,,uniform_transformer,0,0.1,0.2\n", ":2: model"},
      {"no_column.csv", "gpu,model,partition,stage,forward_s\n" + good, ":1: backward_s"},
  };
  for (const auto& c : cases) {
    const std::string path = write_temp(c.name, c.text);
    auto t = read_stage_work_csv(path);
    ASSERT_FALSE(t.ok()) << c.name;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(t.status().message().find(path + c.want), std::string::npos)
        << c.name << ": " << t.status().message();
  }
  auto ok = read_stage_work_csv(write_temp("good.csv", head + good));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  ASSERT_EQ(ok->size(), 1u);
  EXPECT_EQ((*ok)[0].partition, "custom:0,1,2");
  EXPECT_EQ((*ok)[0].stages[0].backward_s, 0.2);
}

// A hand-made job: two stages of equal layer counts whose measured work is not equal (stage 1
// does 0.6 of stage 0's), 8 micro-batches, a known cap response. Its "measured" runs are the
// simulator's own, so the profiled split must reproduce them and the layer counts cannot.
constexpr double kTrueUncappedW = 280;
const CapResponse kTrueResponse{{150, 200, 250, 300}, {0.5, 0.7, 0.9, 1.0}, kTrueUncappedW};
const std::vector<PipelineStageWork> kTrueWork{{1.0, 2.0}, {0.6, 1.2}};

ZeusRun measured_run(std::vector<double> caps, int line) {
  PipelineJobSpec s;
  s.gpu = find_gpu_preset("a100-pcie-80gb");
  s.microbatches = 8;
  s.blocking_w = 80;
  s.cap_response = kTrueResponse;
  s.stages = kTrueWork;
  auto it = pipeline_iteration(s, caps);
  EXPECT_TRUE(it.ok());
  ZeusRun r;
  r.model = "m";
  r.partition = "custom:0,4,8";
  r.pp = 2;
  r.microbatches = 8;
  r.caps_w = std::move(caps);
  r.time_s = it->time_s;
  r.energy_j = it->energy_j;
  r.line = line;
  return r;
}

std::vector<ZeusRun> uniform_runs() {
  std::vector<ZeusRun> out;
  for (double c : {150.0, 200.0, 250.0, 300.0}) out.push_back(measured_run({c, c}, int(c)));
  return out;
}

TEST(PipelineProfiledSplit, TheMeasuredSplitMovesThePredictionTheWayTheWorkDoes) {
  const GpuPreset& gpu = *find_gpu_preset("a100-pcie-80gb");
  const std::vector<ZeusRun> global = uniform_runs();
  // The profile's seconds twice the job's (another run, another batch): only the ratios count.
  const std::vector<PipelineStageWork> profile{{2.0, 4.0}, {1.2, 2.4}};
  auto prof = fit_profiled_runs(global, profile, gpu, 80);
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  EXPECT_NEAR(prof->t_unit_s, 0.5, 0.01);
  EXPECT_NEAR(prof->response.uncapped_w, kTrueUncappedW, 3);
  EXPECT_LT(prof->max_err, 0.002);
  EXPECT_EQ(prof->min_cap_w, 150);
  EXPECT_EQ(prof->max_cap_w, 300);
  auto counts = fit_cap_response_runs(global, gpu, 80);  // equal layer counts
  ASSERT_TRUE(counts.ok()) << counts.status().message();
  // The light stage at a lower cap: it has slack, so the job barely slows; the layer counts
  // (equal work) put it on the critical path and predict it slower than measured.
  const ZeusRun local = measured_run({300, 200}, 9);
  auto spec_p = pipeline_spec_for(local, *prof, gpu, 80);
  auto spec_c = pipeline_spec_for(local, *counts, gpu, 80);
  ASSERT_TRUE(spec_p.ok() && spec_c.ok());
  const std::vector<double> caps = local.caps_w;
  auto p = pipeline_iteration(*spec_p, caps);
  auto c = pipeline_iteration(*spec_c, caps);
  ASSERT_TRUE(p.ok() && c.ok());
  std::printf("measured %.3f s, profiled %.3f s, layer counts %.3f s\n", local.time_s, p->time_s,
              c->time_s);
  EXPECT_NEAR(p->time_s / local.time_s, 1, 0.005);
  EXPECT_NEAR(p->energy_j / local.energy_j, 1, 0.005);
  EXPECT_GT(c->time_s, 1.03 * local.time_s);
  EXPECT_LT(p->time_s, c->time_s);
  // A split of the wrong number of stages is refused.
  EXPECT_FALSE(fit_profiled_runs(global, {{1, 2}}, gpu, 80).ok());
}

TEST(PipelineProfiledSplit, RowsOutsideTheCalibratedCapsAreFlaggedNotPredicted) {
  const GpuPreset& gpu = *find_gpu_preset("a100-pcie-80gb");
  std::vector<ZeusRun> local{measured_run({300, 200}, 2), measured_run({300, 125}, 3),
                             measured_run({325, 300}, 4), measured_run({200, 150}, 5)};
  ZeusRun other = measured_run({300, 200}, 6);
  other.partition = "uniform_transformer";  // no stage work for this partition
  local.push_back(other);
  const std::vector<StageWorkEntry> table{{"A100", "m", "custom:0,4,8", kTrueWork, 2}};
  auto v = validate_pipeline_runs(uniform_runs(), local, gpu, 80, PipelineModel::kCapResponse,
                                  false, table);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->profiled_fits.size(), 1u);
  ASSERT_EQ(v->rows.size(), 5u);
  const ProfiledRow want[] = {ProfiledRow::kPredicted, ProfiledRow::kOutsideRange,
                              ProfiledRow::kOutsideRange, ProfiledRow::kPredicted,
                              ProfiledRow::kNotProfiled};
  for (size_t i = 0; i < 5; ++i) {
    const auto& r = v->rows[i];
    EXPECT_EQ(r.profiled, want[i]) << "row " << i << ": " << profiled_row_name(r.profiled);
    EXPECT_EQ(std::isfinite(r.profiled_time_s), want[i] == ProfiledRow::kPredicted) << i;
    EXPECT_TRUE(std::isfinite(r.time_s)) << i;  // the earlier columns still extrapolate
  }
  EXPECT_NEAR(v->rows[3].profiled_time_s / v->rows[3].run.time_s, 1, 0.005);
  // Without a table (or on the GPU model) nothing is profiled.
  auto none = validate_pipeline_runs(uniform_runs(), local, gpu, 80, PipelineModel::kCapResponse);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->profiled_fits.empty());
  for (const auto& r : none->rows) EXPECT_EQ(r.profiled, ProfiledRow::kNotProfiled);
}

// The measured runs (docs/simulator.md "Profiled work split"): the ±5 % target on 80 % of the
// rows inside the calibrated range is NOT met; the bounds hold the figures measured when the
// profiled split was added (A100 15 of 24, A40 8 of 34), a regression guard, not the target.
TEST(PipelineProfiledSplit, PredictsTheMeasuredRowsInsideTheCalibratedRange) {
  const std::string dir = std::string(FLEXWATT_SOURCE_DIR) + "/data/perseus/";
  auto table = read_stage_work_csv(dir + "stage_work.csv");
  ASSERT_TRUE(table.ok()) << table.status().message();
  struct Set {
    const char* file;
    const char* preset;
    double blocking_w;
    int rows, predicted, within, outside, not_profiled;
  };
  for (const Set& set : {Set{"A100", "a100-pcie-80gb", 83.64, 35, 24, 15, 5, 6},
                         Set{"A40", "a40", 70.38, 47, 34, 8, 5, 8}}) {
    auto global = read_zeus_csv(dir + set.file + "_zeus_global.csv");
    auto local = read_zeus_csv(dir + set.file + "_zeus_local.csv");
    ASSERT_TRUE(global.ok() && local.ok());
    std::vector<StageWorkEntry> mine;
    for (const auto& e : *table) {
      if (e.gpu == set.file) mine.push_back(e);
    }
    auto v = validate_pipeline_runs(*global, *local, *find_gpu_preset(set.preset), set.blocking_w,
                                    PipelineModel::kCapResponse, false, mine);
    ASSERT_TRUE(v.ok()) << v.status().message();
    int predicted = 0, within = 0, outside = 0, none = 0;
    for (const auto& r : v->rows) {
      predicted += r.profiled == ProfiledRow::kPredicted;
      outside += r.profiled == ProfiledRow::kOutsideRange;
      none += r.profiled == ProfiledRow::kNotProfiled;
      if (r.profiled == ProfiledRow::kPredicted) {
        within += std::abs(r.profiled_time_s / r.run.time_s - 1) <= 0.05 &&
                  std::abs(r.profiled_energy_j / r.run.energy_j - 1) <= 0.05;
      }
    }
    std::printf("%s: profiled split %d of %d rows within +-5 %%, %d outside, %d not profiled\n",
                set.file, within, predicted, outside, none);
    EXPECT_EQ(static_cast<int>(v->rows.size()), set.rows);
    EXPECT_EQ(predicted, set.predicted);
    EXPECT_EQ(outside, set.outside);
    EXPECT_EQ(none, set.not_profiled);
    EXPECT_GE(within, set.within);
  }
}

}  // namespace
}  // namespace fw::sim

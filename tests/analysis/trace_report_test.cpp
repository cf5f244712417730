// Nameplate resolution and the figures beyond the per-series summary (trace_report.hpp).

#include "analysis/trace_report.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace fw {
namespace {

TraceSummary two_gpu_trace() {
  TraceSummary t;
  t.gpus.resize(2);
  t.gpus[0].gpu = 0;
  t.gpus[1].gpu = 1;
  t.node.name = "node";
  t.node.energy_j = 3.6e6;  // 1 kWh
  t.node.mean_power_w = 1000;
  t.node.oversub_means = {900, 1000, 1100, 1200};
  return t;
}

TEST(ResolveNameplate, FlagWinsOverMetaAndModels) {
  TraceSummary t = two_gpu_trace();
  t.meta_nameplate_w = 500;
  t.gpu_models = {"h100-sxm5"};
  const Nameplate n = resolve_nameplate(t, 650);
  EXPECT_EQ(n.per_gpu_w, 650);
  EXPECT_EQ(n.source, "--nameplate-w");
}

TEST(ResolveNameplate, MetaNameplateWinsOverModels) {
  TraceSummary t = two_gpu_trace();
  t.meta_nameplate_w = 500;
  t.gpu_models = {"h100-sxm5"};
  const Nameplate n = resolve_nameplate(t, kUnset);
  EXPECT_EQ(n.per_gpu_w, 500);
  EXPECT_EQ(n.source, "meta.json nameplate_w");
}

TEST(ResolveNameplate, CatalogueModelsMixedAreAveraged) {
  TraceSummary t = two_gpu_trace();
  t.gpu_models = {"a100-sxm4-80gb", "h200-sxm"};
  const Nameplate n = resolve_nameplate(t, kUnset);
  EXPECT_EQ(n.per_gpu_w, 550);  // (400 + 700) / 2
  EXPECT_EQ(n.source, "meta.json gpu_models (a100-sxm4-80gb, ...)");
  t.gpu_models = {"h100-sxm5"};
  EXPECT_EQ(resolve_nameplate(t, kUnset).source, "meta.json gpu_models (h100-sxm5)");
}

TEST(ResolveNameplate, UnknownModelOrNothingLeavesItUnset) {
  TraceSummary t = two_gpu_trace();
  Nameplate n = resolve_nameplate(t, kUnset);
  EXPECT_TRUE(std::isnan(n.per_gpu_w));
  EXPECT_TRUE(n.source.empty());
  t.gpu_models = {"h100-sxm5", "mystery-gpu"};
  n = resolve_nameplate(t, kUnset);
  EXPECT_TRUE(std::isnan(n.per_gpu_w));
  EXPECT_TRUE(n.source.empty());
}

TEST(ComputeExtras, NameplateReachesEverySeriesAndTheFigures) {
  TraceSummary t = two_gpu_trace();
  t.gpu_models = {"h100-sxm5", "h100-sxm5"};
  t.jobs.resize(1);
  t.jobs[0].name = "a";
  t.jobs[0].gpu_count = 1;
  t.jobs[0].oversub_means = {400, 500};
  AnalysisOptions o;
  o.scope = BudgetScope::kGpu;
  TraceExtras x;
  x.oversub_tolerance = 0.25;
  x.cost.price_per_kwh = 0.10;
  compute_extras(t, o, kUnset, x);
  EXPECT_EQ(x.nameplate_w, 700);
  EXPECT_EQ(x.nameplate_source, "meta.json gpu_models (h100-sxm5, ...)");
  EXPECT_EQ(t.node.nameplate_w, 1400);
  EXPECT_EQ(t.gpus[1].nameplate_w, 700);
  EXPECT_EQ(t.jobs[0].nameplate_w, 700);
  // node, the job, then (scope gpu) both GPUs.
  ASSERT_EQ(x.curve_series.size(), 4u);
  EXPECT_EQ(x.curve_series[0], &t.node);
  EXPECT_EQ(x.curve_series[1], &t.jobs[0]);
  EXPECT_EQ(x.curve_series[3], &t.gpus[1]);
  EXPECT_EQ(x.curves.size(), 4u);
  ASSERT_EQ(x.job_oversub.size(), 1u);
  EXPECT_EQ(x.node_oversub.nameplate_w, 1400);
  EXPECT_GT(x.node_oversub.ratio, 1);
  EXPECT_DOUBLE_EQ(x.cost_report.energy_kwh, 1.0);
  EXPECT_DOUBLE_EQ(x.cost_report.cost_usd, 0.10);
}

TEST(ComputeExtras, NodeScopeHasNoGpuCurves) {
  TraceSummary t = two_gpu_trace();
  AnalysisOptions o;
  TraceExtras x;
  compute_extras(t, o, 300, x);
  EXPECT_EQ(x.curve_series.size(), 1u);
  EXPECT_EQ(t.node.nameplate_w, 600);
  EXPECT_EQ(x.nameplate_source, "--nameplate-w");
}

// Window stats with one judged window length: `windows` judged, peak mean peak_w.
WindowStats judged(double window_s, int64_t windows, double peak_w) {
  WindowStats w;
  w.window_s = window_s;
  w.windows = windows;
  w.peak_mean_w = peak_w;
  return w;
}

TEST(ComputeExtras, ProposedBudgetsAreTheScopesLargestPeakPerWindow) {
  TraceSummary t = two_gpu_trace();
  t.gpus[0].name = "gpu0";
  t.gpus[1].name = "gpu1";
  t.gpus[0].windows = {judged(1, 10, 450), judged(10, 1, 400), judged(300, 0, 0)};
  t.gpus[1].windows = {judged(1, 10, 430), judged(10, 1, 420), judged(300, 0, 0)};
  t.node.windows = {judged(1, 10, 870), judged(10, 1, 815), judged(300, 0, 0)};
  AnalysisOptions o;
  o.windows_s = {1, 10, 300};
  o.scope = BudgetScope::kGpu;
  TraceExtras x;
  compute_extras(t, o, 500, x);
  ASSERT_EQ(x.proposed.size(), 3u);
  // Per GPU: one budget for every GPU, the largest GPU's peak at each window, named.
  EXPECT_EQ(x.proposed[0].budget_w, 450);
  EXPECT_EQ(x.proposed[0].series, "gpu0");
  EXPECT_DOUBLE_EQ(x.proposed[0].share_of_nameplate, 0.9);
  EXPECT_EQ(x.proposed[1].budget_w, 420);
  EXPECT_EQ(x.proposed[1].series, "gpu1");
  // A window that judged nothing proposes nothing.
  EXPECT_TRUE(std::isnan(x.proposed[2].budget_w));
  EXPECT_TRUE(x.proposed[2].series.empty());
  // The node's own peaks under scope node.
  TraceExtras xn;
  o.scope = BudgetScope::kNode;
  compute_extras(t, o, 500, xn);
  EXPECT_EQ(xn.proposed[0].budget_w, 870);
  EXPECT_EQ(xn.proposed[1].budget_w, 815);
  EXPECT_EQ(xn.proposed[1].series, "node");
  // Headroom: nameplate (2 x 500 W) less the provisioned power (peak of the 30 s means, 1200).
  ASSERT_EQ(xn.headroom.size(), 1u);
  EXPECT_EQ(xn.headroom[0].series, "node");
  EXPECT_EQ(xn.headroom[0].provisioned_w, 1200);
  EXPECT_EQ(xn.headroom[0].headroom_w, 1000 - 1200);
  EXPECT_DOUBLE_EQ(xn.headroom[0].ratio, 1000.0 / 1200);
}

TEST(ComputeExtras, HeadroomUnknownWithoutNameplate) {
  TraceSummary t = two_gpu_trace();
  AnalysisOptions o;
  TraceExtras x;
  compute_extras(t, o, kUnset, x);
  ASSERT_EQ(x.headroom.size(), 1u);
  EXPECT_EQ(x.headroom[0].provisioned_w, 1200);
  EXPECT_TRUE(std::isnan(x.headroom[0].headroom_w));
}

}  // namespace
}  // namespace fw

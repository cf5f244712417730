#include "analysis/trace_report.hpp"

#include <cmath>

#include "hw/gpu_catalog.hpp"

namespace fw {

Nameplate resolve_nameplate(const TraceSummary& t, double flag_w) {
  Nameplate n;
  if (std::isfinite(flag_w)) {
    n.per_gpu_w = flag_w;
    n.source = "--nameplate-w";
    return n;
  }
  if (std::isfinite(t.meta_nameplate_w)) {
    n.per_gpu_w = t.meta_nameplate_w;
    n.source = "meta.json nameplate_w";
    return n;
  }
  if (t.gpu_models.empty()) return n;
  double sum = 0;
  for (const std::string& m : t.gpu_models) {
    const hw::GpuCatalogEntry* g = hw::find_gpu(m);
    if (g == nullptr) return n;
    sum += g->tdp_w;
  }
  n.per_gpu_w = sum / static_cast<double>(t.gpu_models.size());
  n.source = "meta.json gpu_models (" + t.gpu_models.front() +
             (t.gpu_models.size() > 1 ? ", ..." : "") + ")";
  return n;
}

void compute_extras(TraceSummary& t, const AnalysisOptions& o, double flag_nameplate_w,
                    TraceExtras& x) {
  Nameplate n = resolve_nameplate(t, flag_nameplate_w);
  x.nameplate_w = n.per_gpu_w;
  x.nameplate_source = std::move(n.source);
  const double np = x.nameplate_w;
  t.node.nameplate_w = np * static_cast<double>(t.gpus.size());
  for (auto& g : t.gpus) g.nameplate_w = np;
  for (auto& j : t.jobs) j.nameplate_w = np * static_cast<double>(j.gpu_count);
  x.curve_series.push_back(&t.node);
  for (const auto& j : t.jobs) x.curve_series.push_back(&j);
  if (o.scope == BudgetScope::kGpu) {
    for (const auto& g : t.gpus) x.curve_series.push_back(&g);
  }
  for (const SeriesSummary* s : x.curve_series) {
    x.curves.push_back(windows_curve(s->curve, x.curve_tolerance));
  }
  x.node_oversub = oversubscription(t.node.oversub_means, x.oversub_window_s, x.oversub_tolerance,
                                    t.node.nameplate_w);
  for (const auto& j : t.jobs) {
    x.job_oversub.push_back(
        oversubscription(j.oversub_means, x.oversub_window_s, x.oversub_tolerance, j.nameplate_w));
  }
  CostInputs in;
  in.energy_j = t.node.energy_j;
  in.mean_power_w = t.node.mean_power_w;
  in.tokens = t.tokens;
  in.nameplate_per_gpu_w = np;
  in.oversubscription_ratio = x.node_oversub.ratio;
  x.cost_report = cost_report(in, x.cost);
}

Status validate(const TraceExtras& x) {
  auto in_unit = [](double v) { return v >= 0 && v < 1; };  // false for NaN
  if (!in_unit(x.curve_tolerance)) {
    return Status::InvalidArgument("--curve-tolerance: must be in [0, 1)");
  }
  if (!in_unit(x.oversub_tolerance)) {
    return Status::InvalidArgument("--oversub-tolerance: must be in [0, 1)");
  }
  if (!(x.cost.price_per_kwh >= 0) || !std::isfinite(x.cost.price_per_kwh)) {
    return Status::InvalidArgument("--price-per-kwh: must be >= 0");
  }
  if (!(x.cost.kg_co2_per_kwh >= 0) || !std::isfinite(x.cost.kg_co2_per_kwh)) {
    return Status::InvalidArgument("--kg-co2-per-kwh: must be >= 0");
  }
  return Status::Ok();
}

}  // namespace fw

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

namespace {

OversubHeadroom headroom_of(const std::string& series, const Oversubscription& ov) {
  OversubHeadroom h;
  h.series = series;
  h.provisioned_w = ov.provisioned_w;
  h.nameplate_w = ov.nameplate_w;
  h.headroom_w = ov.nameplate_w - ov.provisioned_w;  // NaN when either is
  h.ratio = ov.ratio;
  return h;
}

// Fills x.proposed and x.headroom (REQUIRES: x's oversubscription figures computed).
void propose_budgets(const TraceSummary& t, const AnalysisOptions& o, TraceExtras& x) {
  std::vector<const SeriesSummary*> scope;
  if (o.scope == BudgetScope::kGpu) {
    for (const auto& g : t.gpus) scope.push_back(&g);
  } else if (o.scope == BudgetScope::kJob) {
    for (const auto& j : t.jobs) scope.push_back(&j);
  } else {
    scope.push_back(&t.node);
  }
  for (size_t i = 0; i < o.windows_s.size(); ++i) {
    ProposedBudget p;
    p.window_s = o.windows_s[i];
    for (const SeriesSummary* s : scope) {
      if (i >= s->windows.size() || s->windows[i].windows == 0) continue;  // nothing judged
      const double peak_w = s->windows[i].peak_mean_w;
      if (std::isnan(p.budget_w) || peak_w > p.budget_w) {
        p.budget_w = peak_w;
        p.series = s->name;
        p.share_of_nameplate = peak_w / s->nameplate_w;
      }
    }
    x.proposed.push_back(std::move(p));
  }
  x.headroom.push_back(headroom_of("node", x.node_oversub));
  for (size_t j = 0; j < x.job_oversub.size() && j < t.jobs.size(); ++j) {
    x.headroom.push_back(headroom_of(t.jobs[j].name, x.job_oversub[j]));
  }
}

}  // namespace

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
  propose_budgets(t, o, x);
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

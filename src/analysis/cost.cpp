#include "analysis/cost.hpp"

namespace fw {

CostReport cost_report(const CostInputs& in, const CostOptions& opt) {
  CostReport r;
  r.price_per_kwh = opt.price_per_kwh;
  r.kg_co2_per_kwh = opt.kg_co2_per_kwh;
  r.energy_kwh = in.energy_j / 3.6e6;
  r.cost_usd = r.energy_kwh * opt.price_per_kwh;
  r.co2_kg = r.energy_kwh * opt.kg_co2_per_kwh;
  if (in.tokens && *in.tokens > 0) r.usd_per_million_tokens = r.cost_usd / (*in.tokens / 1e6);
  const double annual_kwh = in.mean_power_w * kHoursPerYear / 1e3;
  r.annual_energy_mwh = annual_kwh / 1e3;
  r.annual_cost_usd = annual_kwh * opt.price_per_kwh;
  r.annual_co2_t = annual_kwh * opt.kg_co2_per_kwh / 1e3;
  if (in.nameplate_per_gpu_w > 0) {
    r.gpus_per_mw_nameplate = 1e6 / in.nameplate_per_gpu_w;
    if (in.oversubscription_ratio > 0) {
      r.gpus_per_mw_oversubscribed = r.gpus_per_mw_nameplate * in.oversubscription_ratio;
      r.extra_gpus_per_mw = r.gpus_per_mw_oversubscribed - r.gpus_per_mw_nameplate;
    }
  }
  return r;
}

}  // namespace fw

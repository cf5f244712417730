#pragma once
// Energy cost, emissions and the value of oversubscription for a measured power draw.
//
// Defaults: $0.08/kWh and 0.25 kg CO2/kWh, the costing assumptions of the 2026 GRPO
// power-control paper (docs/sources.md §1a, secondhand); pass your own.
// Definitions (also in docs/analysis.md, "Cost and carbon"):
// - energy_kwh = energy_j / 3.6e6; cost = energy_kwh × price; co2 = energy_kwh × intensity.
// - Annualised figures assume the measured mean power is drawn all year, 8760 h (an
//   assumption: 100 % duty, no growth).
// - GPUs hosted per MW of provisioned capacity, GPU power only (no host, network or cooling
//   overhead: an assumption): without oversubscription 1e6 / nameplate per GPU; with an
//   oversubscription ratio r (oversubscription.hpp) r × that. extra = the difference.

#include <cmath>
#include <optional>

namespace fw {

inline constexpr double kDefaultPricePerKwh = 0.08;  // USD, docs/sources.md §1a [2nd]
inline constexpr double kDefaultKgCo2PerKwh = 0.25;  // docs/sources.md §1a [2nd]
inline constexpr double kHoursPerYear = 8760;        // assumption: 365 days

struct CostOptions {
  double price_per_kwh = kDefaultPricePerKwh;   // ≥ 0
  double kg_co2_per_kwh = kDefaultKgCo2PerKwh;  // ≥ 0
};

struct CostInputs {
  double energy_j = 0;                           // measured energy of the series
  double mean_power_w = 0;                       // its mean power
  std::optional<double> tokens;                  // tokens produced over the same span
  double nameplate_per_gpu_w = std::nan("");     // NaN: unknown (no per-MW figures)
  double oversubscription_ratio = std::nan("");  // NaN: unknown
};

struct CostReport {
  double price_per_kwh = 0, kg_co2_per_kwh = 0;
  double energy_kwh = 0, cost_usd = 0, co2_kg = 0;
  double usd_per_million_tokens = std::nan("");  // NaN without tokens
  double annual_energy_mwh = 0, annual_cost_usd = 0, annual_co2_t = 0;
  double gpus_per_mw_nameplate = std::nan("");       // without oversubscription
  double gpus_per_mw_oversubscribed = std::nan("");  // at the ratio
  double extra_gpus_per_mw = std::nan("");
};

CostReport cost_report(const CostInputs& in, const CostOptions& opt = {});

}  // namespace fw

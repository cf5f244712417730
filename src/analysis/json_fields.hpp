#pragma once
// JSON fragments shared by the verbs' machine output. Templated on the JSON type because
// some verbs keep key order (nlohmann::ordered_json) and others do not.

#include <cmath>

#include "analysis/cost.hpp"

namespace fw {

// A number, or null when it is NaN or infinite (JSON has no NaN).
template <class Json>
Json num_or_null(double v) {
  return std::isfinite(v) ? Json(v) : Json(nullptr);
}

// The fields of a CostReport (analysis/cost.hpp), under the same names.
template <class Json>
Json cost_report_json(const CostReport& c) {
  Json j;
  j["price_per_kwh"] = c.price_per_kwh;
  j["kg_co2_per_kwh"] = c.kg_co2_per_kwh;
  j["energy_kwh"] = c.energy_kwh;
  j["cost_usd"] = c.cost_usd;
  j["co2_kg"] = c.co2_kg;
  j["usd_per_million_tokens"] = num_or_null<Json>(c.usd_per_million_tokens);
  j["annual_energy_mwh"] = c.annual_energy_mwh;
  j["annual_cost_usd"] = c.annual_cost_usd;
  j["annual_co2_t"] = c.annual_co2_t;
  j["gpus_per_mw_nameplate"] = num_or_null<Json>(c.gpus_per_mw_nameplate);
  j["gpus_per_mw_oversubscribed"] = num_or_null<Json>(c.gpus_per_mw_oversubscribed);
  j["extra_gpus_per_mw"] = num_or_null<Json>(c.extra_gpus_per_mw);
  return j;
}

}  // namespace fw

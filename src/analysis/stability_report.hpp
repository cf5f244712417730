#pragma once
// The output of `flexwatt analyze --stability`: the --json document and the text report
// (tables at most 120 columns wide), from a StabilityReport, an optional reference comparison
// and the limit checks. Field names carry their units; fractions are 0..1 ("_frac"),
// percentages are "_pct". NaN is written as null in JSON and "-" in text. Pure.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stability.hpp"
#include "analysis/stability_limits.hpp"

namespace fw {

nlohmann::ordered_json stability_json(const StabilityReport& r,
                                      const std::optional<ReferenceComparison>& ref,
                                      const std::vector<LimitCheck>& limits);

std::string stability_text(const StabilityReport& r, const std::optional<ReferenceComparison>& ref,
                           const std::vector<LimitCheck>& limits);

}  // namespace fw

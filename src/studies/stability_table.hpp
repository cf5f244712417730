#pragma once
// Output of the power-stabilisation study (`flexwatt stabilize`): a text report within 120
// columns (a header with the site, limits and seeds; one row per arm; each arm's setting below;
// the simulator's speed) and the same as JSON (docs/stabilization.md lists the keys). Pure.

#include <nlohmann/json.hpp>
#include <string>

#include "studies/stability_study.hpp"

namespace fw::studies {

std::string format_stability_table(const StabilityStudyReport& r);
nlohmann::json stability_json(const StabilityStudyReport& r);

// Writes `run`'s site power as CSV, header "time_s,power_w" (what `flexwatt analyze --stability`
// reads as a site power CSV). IoError naming the path.
Status write_site_csv(const std::string& path, const sim::SiteRun& run);

}  // namespace fw::studies

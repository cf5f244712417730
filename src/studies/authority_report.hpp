#pragma once
// The outputs of `flexwatt authority`: its JSON (keys in a fixed order) and its text table,
// and the lookups from the command line's names (job by index or name, knob by name).

#include <nlohmann/json.hpp>
#include <string>

#include "studies/authority.hpp"

namespace fw::studies {

// The JSON of `flexwatt authority --json` for a sweep of scenario s.
nlohmann::ordered_json authority_json(const AuthorityReport& r, const sim::Scenario& s);
// The human table: per knob the settings, then the ranking.
std::string format_authority_table(const AuthorityReport& r, const sim::Scenario& s);

// The index of the job named `job`, or whose index is `job` ("0"); InvalidArgument if none.
Result<int> find_job(const sim::Scenario& s, const std::string& job);
// A workload knob by its name ("gen_concurrency"); InvalidArgument listing the known ones.
Result<Knob> knob_by_name(const std::string& name);

}  // namespace fw::studies

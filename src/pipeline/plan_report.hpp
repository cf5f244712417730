#pragma once
// A pipeline plan as `flexwatt pipeline plan` reports it: the JSON document (--json) and the
// text table. `max_cap_w` is the GPU's settable maximum: a planned cap above it is flagged
// ("above_max_cap" in JSON, "*" in the table), since the device would refuse it. `dag` is the
// plan's 1F1B schedule (which segments of a stage have ops: a segment without ops is null in
// JSON and left out of the table).

#include <nlohmann/json.hpp>
#include <string>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/planner.hpp"

namespace fw::pipeline {

struct PlanReportContext {
  std::string profile_path;
  std::string gpu_name;
  double max_cap_w = 0;
  const OneFOneB* dag = nullptr;  // REQUIRES: non-null, the plan's stages and micro-batches
};

nlohmann::json plan_json(const Plan& p, const PlanReportContext& ctx);
std::string format_plan(const Plan& p, const PlanReportContext& ctx);

}  // namespace fw::pipeline

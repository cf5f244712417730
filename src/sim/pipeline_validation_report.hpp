#pragma once
// `flexwatt pipeline validate`: for each GPU set of the Perseus artifact's measured Zeus runs
// in `dir` (A100: a100-pcie-80gb, A40: a40; files <SET>_zeus_{global,local}.csv), fit each
// model's uniform-limit runs and predict its per-stage-limit runs (validate_pipeline_runs),
// every row. `json` is the --json document (simulated against measured, tolerance 0.05 in time
// and energy); `text` the table. A row is "within" when both errors are within the tolerance.

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.hpp"

namespace fw::sim {

struct PipelineValidationReport {
  nlohmann::json json;
  std::string text;
};

// gpu_model: predict with the GPU power model's clock for a cap (the earlier model) in place of
// the cap response measured on the uniform runs. Errors from reading the CSVs as they are.
Result<PipelineValidationReport> pipeline_validation_report(const std::string& dir, bool gpu_model);

}  // namespace fw::sim

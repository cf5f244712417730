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
// the cap response measured on the uniform runs. stage_work (not empty, cap response only): the
// per-stage work table (sim/stage_work_table.hpp) whose split predicts every row again (columns
// "prof"; rows with a cap outside the model's uniform caps flagged, not predicted, not counted).
// Errors from reading the CSVs as they are (the table is read after the first set's Zeus CSVs).
Result<PipelineValidationReport> pipeline_validation_report(const std::string& dir, bool gpu_model,
                                                            const std::string& stage_work = "");

}  // namespace fw::sim

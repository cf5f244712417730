#pragma once
// Per-stage work measured on a real pipeline job: each stage's forward and backward time of one
// micro-batch at the maximum SM clock (data/perseus/stage_work.csv, derived from the Perseus
// artifact's per-rank op timings by scripts/extract_perseus_stage_work.py). The validation uses
// only the ratios between stages (the work split); the absolute scale is fitted elsewhere.
//
// File: CSV with a header naming at least gpu, model, partition, stage, forward_s, backward_s
// (other columns ignored); one row per stage, stages of one (gpu, model, partition) numbered
// 0, 1, ... in order. A partition holding commas is double-quoted.

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "sim/pipeline_job.hpp"

namespace fw::sim {

struct StageWorkEntry {
  std::string gpu;                        // the artifact's GPU set ("A100", "A40")
  std::string model, partition;           // as in the Zeus CSVs (model_name, partition_method)
  std::vector<PipelineStageWork> stages;  // seconds, one per stage, in stage order, all > 0
  int64_t line = 0;                       // line of stage 0 in its file
};

// Reads the table. InvalidArgument "path:line: field: why" on a missing column, an empty name,
// a stage out of order or repeated, a time that is not a finite number > 0; the reader's
// status when the file cannot be read.
Result<std::vector<StageWorkEntry>> read_stage_work_csv(const std::string& path);

// The entry of (gpu, model, partition), or nullptr.
const StageWorkEntry* find_stage_work(const std::vector<StageWorkEntry>& table,
                                      const std::string& gpu, const std::string& model,
                                      const std::string& partition);

}  // namespace fw::sim

#pragma once
// The pipeline hook's records (clients/python/flexwatt_client.py PipelineTimings; format in
// docs/pipeline-profile.md): one file per rank, JSON lines, format
// "flexwatt-pipeline-timings/1":
//   {"type":"anchor","format":...,"unix_s":W,"mono_ns":M,"stage":s,"stages":S,"pipeline":p,
//    "gpu":g,"rank":r}
//   {"type":"op","instr":"forward"|"backward","mb":i,"step":n,"start_ns":t0,"end_ns":t1}
//   {"type":"step","step":n,"start_ns":t0,"end_ns":t1}
// A record's unix time is W + (t − M) / 1e9 of the anchor before it (a restarted rank appends a
// new anchor; stage, stages, pipeline and gpu must not change within a file).
//
// Contract: read_rank_timings() accepts a file only when its first record is an anchor, every
// line is one JSON object of a known type with its fields of the right type, end ≥ start and
// the anchor's fields are consistent; anything else is InvalidArgument "path:line: field: why".
// Unknown extra fields are ignored (the format may grow). write_rank_timings() writes the same
// format (the simulator's adapter; tests).

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "pipeline/stage_profile.hpp"

namespace fw::pipeline {

inline constexpr const char* kTimingsFormat = "flexwatt-pipeline-timings/1";

struct OpTiming {
  Instr instr = Instr::kForward;
  int microbatch = 0;
  int64_t step = 0;
  double start_unix_s = 0, end_unix_s = 0;
};

struct StepTiming {
  int64_t step = 0;
  double start_unix_s = 0, end_unix_s = 0;
};

// One rank's records: its stage (of `stages`), data-parallel pipeline and GPU (the host's NVML
// index, the agent trace's `gpu` column).
struct RankTimings {
  std::string source;
  int stage = 0, stages = 1, pipeline = 0, gpu = 0;
  std::vector<OpTiming> ops;  // in file order
  std::vector<StepTiming> steps;
};

Result<RankTimings> read_rank_timings(const std::string& path);
// `path` names a file or a folder (its *.jsonl files, sorted by name). InvalidArgument when
// none is found or the ranks disagree on the number of stages.
Result<std::vector<RankTimings>> read_timings(const std::vector<std::string>& paths);

// Writes `r` in the format above, one anchor at unix_s = `anchor_unix_s`, times in ns since it.
Status write_rank_timings(const std::string& path, const RankTimings& r, double anchor_unix_s);

}  // namespace fw::pipeline

#pragma once
// The agent's per-GPU trace as `flexwatt pipeline profile` reads it: the rows of gpus.csv
// (docs/telemetry.md "Trace format": time_s,gpu,power_w,energy_j,power_limit_w,sm_util,
// mem_util,sm_clock_mhz,temp_c), only the columns a profile needs. An empty cell is NaN.
//
// Contract: read_gpu_samples() takes a gpus.csv file, a trace folder holding one, or the
// agent's trace_dir (its seg-NNNNNN/ folders, in order); a header without time_s, gpu,
// power_w, energy_j, power_limit_w or sm_clock_mhz, or a time_s / gpu cell that is not a
// number, is InvalidArgument "path:line: field: why". start_unix_s is meta.json's
// "start_unix_s" (the first segment's) when present, else NaN: trace times are then seconds
// since an unknown start and the caller states the offset. write_gpu_samples() writes the
// same columns (the others empty).

#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::pipeline {

struct GpuSample {
  double time_s = 0;
  int gpu = 0;
  double power_w = 0, energy_j = 0, cap_w = 0, sm_clock_mhz = 0;  // NaN: not read
};

struct GpuTrace {
  std::vector<GpuSample> samples;  // file order
  double start_unix_s = 0;         // NaN: unknown
  std::string source;
};

Result<GpuTrace> read_gpu_samples(const std::string& path);
Status write_gpu_samples(const std::string& path, const std::vector<GpuSample>& samples);

}  // namespace fw::pipeline

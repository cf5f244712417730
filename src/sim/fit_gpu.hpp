#pragma once
// The GPU class of a `flexwatt fit` input (docs/simulator.md, rules G1–G4): from the log's
// GPU-name column (nvidia-smi `name`) or a flexwatt trace's meta.json `gpu_models`; else from
// the power levels against the catalogue (a GPU whose cap range cannot hold the log's training
// level, or whose bare idle is above the log's lowest level, is excluded); a sweep from its caps
// (every cap inside the GPU's settable range). A given --gpu is checked against the same facts.
// Errors (InvalidArgument: exit 2) say what was found and ask for --gpu when the class is
// ambiguous.

#include <string>

#include "core/status.hpp"
#include "sim/fit.hpp"
#include "sim/gpu_model.hpp"

namespace fw::sim {

struct GpuClass {
  const GpuPreset* gpu = nullptr;
  std::string source;  // how it was chosen ("name column 'NVIDIA H100 80GB HBM3'", …)
};

// The GPU named in a log (first data row of an nvidia-smi `name` column, or a trace's
// meta.json gpu_models when they agree): its catalogue entry, or nullptr with *named set to
// the name when the catalogue has no such GPU; nullptr and empty *named when the log names none.
Result<const GpuPreset*> gpu_named_in_log(const std::string& path, std::string* named);
// The catalogue GPU of a device name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"): exact
// NVML name, else by the family in it (A100, H100, H200); nullptr when none.
const GpuPreset* gpu_from_device_name(const std::string& device_name);

// given: the --gpu value ("" for none).
Result<GpuClass> gpu_for_log(const std::string& path, const PowerLog& log,
                             const std::string& given);
Result<GpuClass> gpu_for_sweep(const MeasuredSweep& m, const std::string& given);

}  // namespace fw::sim

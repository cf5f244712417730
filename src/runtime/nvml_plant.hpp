#pragma once
// NvmlPlant: the NodePlant of a real node (backends nvml and fake-nvml). Telemetry through
// NvmlGpuSource (read-only), caps through NvmlPowerCapActuator, both over one NvmlLibrary
// (hw/nvml/). Its time is the wall's (missed deadlines are skipped); its jobs are the job
// channel's, their GPUs mapped from NVML indices to plant positions; each job's reading is the
// channel's (the client's report). GpuInfo::default_cap_w is the cap found at start once
// adopt_caps_in_force() ran (node_plant.hpp). Not thread-safe (the loop thread only).

#include <memory>
#include <vector>

#include "runtime/node_plant.hpp"
#include "telemetry/nvml_source.hpp"

namespace fw {

class NvmlPlant : public NodePlant {
 public:
  // REQUIRES: cfg.backend is nvml or fake-nvml (fake-nvml with nvml_library set). `jobs` may be
  // null and must outlive the plant.
  static Result<std::unique_ptr<NvmlPlant>> open(const NodePlantConfig& cfg, JobChannel* jobs);

  Status read(double now_s, Snapshot& out) override;
  Status write(const Command& cmd) override;
  bool refresh_jobs() override;
  void adopt_caps_in_force() override;
  double clock_event_reasons(size_t g) const override;
  MissedDeadlines missed_deadlines() const override { return MissedDeadlines::kSkip; }
  std::vector<int> job_gpu_indices() const override;

 private:
  NvmlPlant(NodePlantConfig cfg, JobChannel* jobs) : NodePlant(std::move(cfg), jobs) {}

  std::unique_ptr<NvmlGpuSource> source_;
  std::vector<int> read_order_;              // NVML indices, plant order
  std::vector<std::string> job_ids_;         // channel id of each plant job
  std::vector<double> clock_event_reasons_;  // per GPU, of the last read
};

}  // namespace fw

#pragma once
// NvmlPlant: the NodePlant of a real node (backends nvml and fake-nvml). Telemetry through
// NvmlGpuSource (read-only), caps through NvmlPowerCapActuator, both over one NvmlLibrary
// (hw/nvml/). Its time is the wall's (missed deadlines are skipped); its jobs are the job
// channel's, their GPUs mapped from NVML indices to plant positions; each job's reading is the
// channel's (the client's report). GpuInfo::default_cap_w is the cap found at start once
// adopt_caps_in_force() ran (node_plant.hpp). Every read and cap call after open() runs on a
// CallDeadline worker (runtime/call_deadline.hpp) with cfg.nvml_deadline_s: a call that hangs
// on a wedged GPU makes that read or write fail (Unavailable) instead of blocking the loop, and
// every later one fail at once until it returns. Not thread-safe (the loop thread only).

#include <memory>
#include <vector>

#include "actuation/nvml_power_cap_actuator.hpp"
#include "runtime/call_deadline.hpp"
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

  // Drops plant GPU position i (lost): from read_order_, info_.gpus, node_gpus_; the cap writer
  // stops writing it.
  void drop_gpu(size_t i, const std::string& reason);

  // What the worker's calls touch: owned jointly by the plant and any call still running.
  struct Devices {
    std::unique_ptr<NvmlGpuSource> source;
    std::unique_ptr<NvmlPowerCapActuator> caps;
  };
  std::shared_ptr<Devices> dev_;
  std::shared_ptr<CallDeadline> deadline_;
  bool gpus_changed_ = false;                // a GPU was dropped since the last refresh_jobs
  std::vector<int> read_order_;              // NVML indices, plant order (cap writer's ids)
  std::vector<std::string> job_ids_;         // channel id of each plant job
  std::vector<double> clock_event_reasons_;  // per GPU, of the last read
};

}  // namespace fw

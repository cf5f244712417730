#pragma once
// NvmlPlant: the NodePlant of a real node (backends nvml and fake-nvml). Telemetry through
// NvmlGpuSource (read-only), caps through NvmlPowerCapActuator, both over one NvmlLibrary
// (nvml/). Its time is the wall's (missed deadlines are skipped); its jobs are the job
// channel's, their GPUs mapped from NVML indices to plant positions; each job's reading is the
// channel's (the client's report). GpuInfo::default_cap_w is the cap found at start once
// adopt_caps_in_force() ran (node_plant.hpp). Every read and cap call after open() runs on a
// CallDeadline worker (runtime/call_deadline.hpp) with cfg.nvml_deadline_s: a call that hangs
// on a wedged GPU makes that read or write fail (Unavailable) instead of blocking the loop, and
// every later one fail at once until it returns. Not thread-safe (the loop thread only), except
// smoothing_support() (fixed at open) and fill_support() (Ok while a channel job declares the
// fill hook, as of the last refresh_jobs()).
//
// Power smoothing (Command::gpu_settings; docs/stabilization.md "In the agent"): through an
// NvmlPowerSmoothingActuator opened over the same library and GPUs as the caps, its calls on
// the same deadline worker. smoothing_support() is Ok when every GPU of the plant has it, else
// the first refusal in read order: the actuator's NotSupported naming the GPU and model (an
// H100), or the driver (before R570: the missing symbols, or a version with no known field
// layout). write(cmd):
// - The settings are checked whole before any is written: a GPU the command sets that has no
//   smoothing (NotSupported, the GPU and model named), a floor outside the device's settable
//   range (InvalidArgument naming the GPU, smoothing_floor and the range in %: refused, never
//   clamped, as the actuator refuses it), or a non-zero fill on a GPU that no job with a fill
//   hook runs on (NotSupported naming the row) refuses every GPU's settings, "nothing applied".
//   The fill is the job client's workload: each GPU's fill target (0: off) is handed to every
//   channel job with the hook ("fill": true) that runs on the GPU (JobChannel::set_fill, by
//   NVML index), once the command passed its checks; a fill of 0 on a GPU without one does
//   nothing. A row left NaN keeps the device's value (read first). An
//   infinite ramp rate (the table's "no limit") has no NVML value: it is written as the whole
//   TMP ceiling per kNoRampLimitS (the ceiling unknown: the GPU's maximum cap). Writing turns
//   smoothing on; the parameters go into the active preset profile.
// - The caps of the same command are written whatever happens to its settings (the budget never
//   waits on smoothing), as before: every GPU tried, the first failure kept.
// - Then the settings, GPU by GPU; a device error stops there (GPUs written before it stay
//   written, and are restored with the others). write() returns the caps' first failure, else
//   the settings' refusal or failure.

#include <atomic>
#include <map>
#include <memory>
#include <vector>

#include "actuation/nvml_power_cap_actuator.hpp"
#include "actuation/nvml_power_smoothing_actuator.hpp"
#include "runtime/call_deadline.hpp"
#include "runtime/node_plant.hpp"
#include "telemetry/nvml_source.hpp"

namespace fw {

// An infinite ramp rate is written as the TMP ceiling per this many seconds (an assumption:
// NVML documents no range for the rates and no "no limit" value; the site simulator applies a
// new setting within its 10 ms step, so a rate that crosses the whole range within one step is
// no limit there).
inline constexpr double kNoRampLimitS = 0.01;

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
  Status smoothing_support() const override { return smoothing_support_; }
  Status fill_support() const override;
  Status save_smoothing(const std::vector<SavedSmoothing>& kept) override;
  std::vector<SavedSmoothing> saved_smoothing() const override { return saved_smoothing_; }
  Status restore_smoothing() override;
  const PowerSmoothingSettings* smoothing_in_force(int gpu) const override;

 private:
  NvmlPlant(NodePlantConfig cfg, JobChannel* jobs) : NodePlant(std::move(cfg), jobs) {}

  // Drops plant GPU position i (lost): from read_order_, info_.gpus, node_gpus_; the cap writer
  // stops writing it.
  void drop_gpu(size_t i, const std::string& reason);

  // What the worker's calls touch: owned jointly by the plant and any call still running.
  struct Devices {
    std::unique_ptr<NvmlGpuSource> source;
    std::unique_ptr<NvmlPowerCapActuator> caps;
    std::unique_ptr<NvmlPowerSmoothingActuator> smoothing;  // null: the driver has none
  };
  // The smoothing part of write(): checked whole, then written (see above).
  Status write_smoothing(const Command& cmd);
  // Updates the loop thread's copies after a smoothing call returned in time.
  void take_smoothing(const std::map<int, PowerSmoothingSettings>& saved,
                      const std::map<int, PowerSmoothingSettings>& in_force);
  std::shared_ptr<Devices> dev_;
  std::shared_ptr<CallDeadline> deadline_;
  bool gpus_changed_ = false;                // a GPU was dropped since the last refresh_jobs
  std::vector<int> read_order_;              // NVML indices, plant order (cap writer's ids)
  std::vector<std::string> job_ids_;         // channel id of each plant job
  std::vector<double> clock_event_reasons_;  // per GPU, of the last read
  Status smoothing_support_;                 // fixed at open
  std::atomic<bool> fill_jobs_{false};       // a channel job declared the fill hook
  // The loop thread's copies of the actuator's record (by NVML index): what was saved, and
  // what is in force as last saved, written and read back, or restored.
  std::vector<SavedSmoothing> saved_smoothing_;
  std::map<int, PowerSmoothingSettings> smoothing_in_force_;
};

}  // namespace fw

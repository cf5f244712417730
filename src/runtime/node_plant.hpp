#pragma once
// NodePlant: a Plant over one node, what `flexwatt agent` controls. Three backends:
//   nvml        the real driver (nvml::NvmlLibrary::load(): FLEXWATT_NVML_LIBRARY or the default)
//   fake-nvml   the test library (tests/telemetry/fake_nvml), named by nvml_library
//   sim:PATH    the simulator on scenario PATH, advanced in real time: read(now_s) moves the
//               simulated cluster to now_s seconds after open
// Telemetry is read-only (GpuTelemetrySource); caps go through a PowerCapActuator (NVML, or an
// in-memory one over the simulator), so every cap is validated against the device's range
// before it is written. Jobs and knobs go through a JobChannel: on hardware the plant's jobs are
// the channel's (or, with none registered, one job "node" on every GPU without knobs, so
// cap controllers still act); on sim they are the scenario's, and channel job i mirrors simulated
// job i (it gets the knobs written; its report age is what the loop sees).
//
// The job set may change between ticks: refresh_jobs() re-reads it, and the caller restarts its
// episode (limiter, history) when it returns true. Not thread-safe (the loop thread only).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actuation/power_cap_actuator.hpp"
#include "control/budget.hpp"
#include "control/plant.hpp"
#include "runtime/job_channel.hpp"
#include "telemetry/gpu_source.hpp"

namespace fw {

struct NodePlantConfig {
  std::string backend = "nvml";            // nvml | fake-nvml | sim:PATH
  std::string nvml_library;                // fake-nvml: required; nvml: empty = default search
  std::vector<int> gpus;                   // NVML indices; empty: all
  uint64_t seed = 1;                       // sim: run seed
  std::vector<std::string> sim_overrides;  // sim: scenario --set assignments
  // sim only (tests and demos): simulated seconds per wall second. The loop's clock runs this
  // much faster, so period_s, duration_s and the plant's time are simulated seconds.
  double time_scale = 1;
};

// Identity of one GPU for the API and /metrics.
struct NodeGpu {
  int index = 0;     // NVML index (or the simulated GPU's plant index)
  std::string uuid;  // NVML "GPU-…"; "index-N" without nvmlDeviceGetUUID; "sim-N" on sim
  std::string name;
};

class NodePlant : public Plant {
 public:
  // InvalidArgument for an unknown backend; the backend's open errors otherwise. `jobs` may be
  // null (no job channel) and must outlive the plant.
  static Result<std::unique_ptr<NodePlant>> open(const NodePlantConfig& cfg, JobChannel* jobs);
  ~NodePlant() override;

  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override;
  Status write(const Command& cmd) override;

  // Re-reads the job set (see above). A channel job's `gpus` are NVML indices (node_gpus()
  // [].index); they are mapped to plant positions, and indices this plant does not manage are
  // dropped (the API refuses them). A job listing none (or none of this plant's) is a job on
  // the whole node.
  bool refresh_jobs();
  // Hardware: each GPU's cap in force now becomes its default_cap_w, what "uncontrolled" and
  // every controller's untouched GPUs are put back to. The device's own default (often its
  // maximum) is not the node's: an operator's 350 W cap must not be lifted to 400 W because a
  // job registered. Call after any restore, before the first write. No-op on sim.
  void adopt_caps_in_force();
  PowerCapActuator& caps() { return *caps_; }
  const std::vector<NodeGpu>& node_gpus() const { return node_gpus_; }
  // Channel id of plant job j ("" when the sim job has no channel job).
  const std::string& job_id(size_t j) const;
  // Seconds since plant job j's channel job last reported (NaN: no channel job).
  double job_report_age_s(size_t j) const;
  // GPU g's NVML clocks-event (throttle) reason bit mask at the last read(); NaN when the
  // device does not report one, before the first read, and on sim.
  double clock_event_reasons(size_t g) const;
  const std::string& backend() const { return cfg_.backend; }
  bool simulated() const { return sim_ != nullptr; }
  // sim: the scenario's budget schedule; empty on hardware.
  const BudgetSchedule& scenario_budget() const { return scenario_budget_; }
  // sim: the scenario's episode length, s (what `eval` runs by default); NaN on hardware.
  double scenario_duration_s() const { return scenario_duration_s_; }
  // sim: a fresh simulated plant of the same scenario for `seed` (controller calibration);
  // empty on hardware.
  PlantFactory sim_factory() const { return sim_factory_; }

  struct Hardware;  // node_plant.cpp

 private:
  explicit NodePlant(NodePlantConfig cfg, JobChannel* jobs);
  Status open_hardware();
  Status open_sim(const std::string& scenario_path);

  NodePlantConfig cfg_;
  JobChannel* jobs_;
  bool jobs_read_ = false;
  std::vector<std::string> job_ids_;  // hardware: channel id of each plant job
  std::vector<ChannelJob> channel_jobs_;
  std::vector<double> clock_event_reasons_;  // per GPU, of the last hardware read
  PlantInfo info_;
  std::vector<NodeGpu> node_gpus_;
  std::unique_ptr<Hardware> hw_;
  std::unique_ptr<Plant> sim_;
  std::unique_ptr<PowerCapActuator> caps_;
  BudgetSchedule scenario_budget_;
  double scenario_duration_s_ = kUnset;
  PlantFactory sim_factory_;
};

}  // namespace fw

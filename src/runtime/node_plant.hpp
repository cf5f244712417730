#pragma once
// NodePlant: a Plant over one node, what `flexwatt agent` controls. Two implementations, one
// interface, so the agent never asks which it has:
//   NvmlPlant (runtime/nvml_plant.hpp)        backends nvml (the real driver) and fake-nvml (the
//                                             test library named by nvml_library)
//   the simulator's real-time adapter         backend sim:PATH (runtime/sim_node_plant.hpp): a
//                                             simulated cluster as a Plant, moved to each read's
//                                             time (the driver's wall-clock schedule)
// open() picks one by cfg.backend. Telemetry is read-only; caps go through a PowerCapActuator
// (NVML, or an in-memory one over the simulator), so every cap is validated against the
// device's range before it is written. Jobs and knobs go through a JobChannel: on hardware the
// plant's jobs are the channel's (or, with none registered, one job "node" on every GPU without
// knobs, so cap controllers still act); on sim they are the scenario's, and channel job i
// mirrors simulated job i (it gets the knobs written; its report age is what the loop sees);
// simulated job i's knobs are reachable (info().jobs[i].knob_ranges available) only while
// channel job i is registered, unless sim_knobs_without_job.
//
// A GPU that falls off the bus (NVML_ERROR_GPU_IS_LOST) at open or in a read is dropped from
// the plant: open() skips it, a read that finds it lost fails once (Unavailable, naming it) and
// the GPU leaves info().gpus, node_gpus() and the cap writer; the next refresh_jobs() returns
// true so the caller restarts its episode on the GPUs left. lost_gpus() lists them.
//
// What differs between the two is said by the plant, as data, never by asking which it is:
// missed_deadlines() (a plant on its own time catches up, hardware skips), defaults() (a
// scenario's budget and episode length, a factory for controllers that calibrate on a model
// plant), job_gpu_indices() (what a registering job may list), and each snapshot's job
// readings (the plant's measure of each job's progress: the client's report on hardware, the
// simulated job's on sim; the client's announcements, JobReading::starts_in_s and the rest, on
// both: on sim where the simulator makes none, its seconds scaled by time_scale).
//
// The job set may change between ticks: refresh_jobs() re-reads it, and the caller restarts its
// episode (limiter, history) when it returns true.
//
// Command::gpu_settings (kGpuSettingTable: power smoothing's floor, ramp rates and hysteresis, and
// the fill workload; docs/stabilization.md "In the agent") are applied only where the plant says
// so: smoothing_support() and fill_support() are Ok, or the reason write() refuses them
// (NotSupported naming the GPU and model, or the driver). Smoothing support is fixed at open;
// the fill is the job client's workload, so fill_support() is Ok while a registered job declares
// the fill hook (NvmlPlant; refresh_jobs() updates it), and write() hands each such job its GPUs'
// fill targets through the channel (JobChannel::set_fill). The smoothing
// settings found are saved, kept in the restore file and put back like the caps
// (save_smoothing(), saved_smoothing(), restore_smoothing()); on a plant without smoothing they
// are no-ops. Not thread-safe (the loop thread only), except smoothing_support() and
// fill_support(), which any thread may call once open() returned.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actuation/power_cap_actuator.hpp"
#include "actuation/power_smoothing_actuator.hpp"
#include "control/plant.hpp"
#include "runtime/job_channel.hpp"
#include "vocab/budget.hpp"

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
  // sim only: the simulated jobs' knobs reach the controllers with no job registered (eval's
  // world, which has no job channel: the agent-vs-eval parity tests). Off (default), the sim
  // backend is the hardware's: a simulated job's knobs are reachable only while the channel job
  // of its position is registered, so a knob controller with none falls back (no_actuator).
  bool sim_knobs_without_job = false;
  // nvml, fake-nvml: how long a read or a cap write through NVML may take before the plant
  // gives up on it (a wedged GPU can hang a call; runtime/call_deadline.hpp).
  double nvml_deadline_s = 2.0;
};

// Identity of one GPU for the API and /metrics.
struct NodeGpu {
  int index = 0;     // NVML index (or the simulated GPU's plant index)
  std::string uuid;  // NVML "GPU-…"; "index-N" without nvmlDeviceGetUUID; "sim-N" on sim
  std::string name;
  // The power reading the controllers see and its averaging (docs/agent-api.md "power_source"):
  // "nvml_field_power_instant" (field 186, instantaneous), "nvmlDeviceGetPowerUsage" (a ~1 s
  // trailing average on Hopper and on Ampere other than GA100; instantaneous on GA100), or
  // "sim:instant" / "sim:avg_1s" (the simulator's reading of the GPU model, hw/gpu_catalog).
  std::string power_source;
  std::string power_averaging;  // "avg_1s" | "instant" | "unknown" (power_averaging_name)
  // GpuReading::energy_j is the device's energy counter (or the simulator's exact integral),
  // not an integral of the power samples: budget windows are judged on it.
  bool energy_counter = false;
};

// A GPU dropped from the plant (see above).
struct LostGpu {
  int index = 0;     // NVML index
  std::string uuid;  // empty when it was lost before its UUID was read
  std::string reason;
};

// What a wall-clock driver does with a deadline it missed.
enum class MissedDeadlines {
  kSkip,     // the plant's time is the wall's: the tick is skipped (its time has passed)
  kCatchUp,  // the plant keeps its own time: the tick is taken late, so the episode is the same
};

// What the plant comes with, for the agent's setup.
struct NodePlantDefaults {
  BudgetSchedule budget;      // a scenario's schedule; empty: none (the agent uses its own)
  double episode_s = kUnset;  // a scenario's episode length (what `eval` runs); NaN: none
  PlantFactory model_plant;   // a fresh model plant per seed (calibration); empty: none
};

class NodePlant : public Plant {
 public:
  // InvalidArgument for an unknown backend; the backend's open errors otherwise. `jobs` may be
  // null (no job channel) and must outlive the plant.
  static Result<std::unique_ptr<NodePlant>> open(const NodePlantConfig& cfg, JobChannel* jobs);
  ~NodePlant() override = default;

  const PlantInfo& info() const override { return info_; }

  // Re-reads the job set (see above). A channel job's `gpus` are NVML indices (node_gpus()
  // [].index); they are mapped to plant positions, and indices this plant does not manage are
  // dropped (the API refuses them). A job listing none (or none of this plant's) is a job on
  // the whole node.
  virtual bool refresh_jobs() = 0;
  // Each GPU's cap in force now becomes its default_cap_w, what "uncontrolled" and every
  // controller's untouched GPUs are put back to, where the device's own default (often its
  // maximum) is not the node's: an operator's 350 W cap must not be lifted to 400 W because a
  // job registered. Call after any restore, before the first write. No-op where the plant's
  // defaults are its own (sim).
  virtual void adopt_caps_in_force() {}
  // GPU g's NVML clocks-event (throttle) reason bit mask at the last read(); NaN when the
  // device does not report one, before the first read, and on sim.
  virtual double clock_event_reasons(size_t) const { return kUnset; }
  virtual MissedDeadlines missed_deadlines() const = 0;
  virtual const NodePlantDefaults& defaults() const { return defaults_; }
  // The GPU indices a registering job may list (node_gpus()[].index); empty: any, the plant
  // does not map them (sim: channel jobs mirror the scenario's, whatever they list).
  virtual std::vector<int> job_gpu_indices() const { return {}; }

  // What write() can apply of Command::gpu_settings (see above). The defaults: neither.
  virtual Status smoothing_support() const;
  virtual Status fill_support() const;
  // Records every smoothing-capable GPU's settings in force as what restore_smoothing() puts
  // back, the GPUs of `kept` (NVML indices, resolve_saved_smoothing) at kept's settings instead:
  // those of a run that died, which restore_smoothing() then puts in force. Call before the
  // first write, as PowerCapActuator::save_with. On a plant without smoothing: Ok with `kept`
  // empty, else NotSupported naming the GPU (a restore file this node cannot apply).
  virtual Status save_smoothing(const std::vector<SavedSmoothing>& kept) {
    return kept.empty() ? Status::Ok() : smoothing_support();
  }
  // What save_smoothing() (or a first write) recorded, by NVML index (uuid left empty).
  virtual std::vector<SavedSmoothing> saved_smoothing() const { return {}; }
  // Writes the saved settings back on every GPU whose settings may differ from them (written
  // since, or kept from a run that died), lost GPUs skipped; trying every GPU, the first failure
  // returned. Ok when there is none.
  virtual Status restore_smoothing() { return Status::Ok(); }
  // The settings in force on NVML GPU `gpu` as the plant last knew them (saved, written and read
  // back, or restored); null when not known (no smoothing on it, nothing saved: read_only).
  virtual const PowerSmoothingSettings* smoothing_in_force(int) const { return nullptr; }

  PowerCapActuator& caps() { return *caps_; }
  const std::vector<NodeGpu>& node_gpus() const { return node_gpus_; }
  const std::vector<LostGpu>& lost_gpus() const { return lost_gpus_; }
  // Channel id of plant job j ("" when the plant job has no channel job).
  const std::string& job_id(size_t j) const;
  // Seconds since plant job j's channel job last reported (NaN: no channel job).
  double job_report_age_s(size_t j) const;
  const std::string& backend() const { return cfg_.backend; }

 protected:
  NodePlant(NodePlantConfig cfg, JobChannel* jobs) : cfg_(std::move(cfg)), jobs_(jobs) {}
  // Re-reads the channel's jobs into channel_jobs_; true when their ids changed (or on the
  // first read, with *first set).
  bool read_channel(bool* first);

  NodePlantConfig cfg_;
  JobChannel* jobs_;
  bool jobs_read_ = false;
  std::vector<ChannelJob> channel_jobs_;
  PlantInfo info_;
  std::vector<NodeGpu> node_gpus_;
  std::vector<LostGpu> lost_gpus_;
  std::unique_ptr<PowerCapActuator> caps_;
  NodePlantDefaults defaults_;
};

}  // namespace fw

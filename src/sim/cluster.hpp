#pragma once
// sim::Cluster: the simulated plant — GPUs (power model, firmware cap enforcement, sensors)
// running LLM jobs in virtual time. Copyable: clone() continues exactly as the original
// would, random streams included. Everything it reports is simulated.
//
// Time: virtual time advances in fixed integration steps of dt_s; read(now_s) runs every
// whole step that ends at or before now_s (+1e-9) and reports the state after the last one.
// Sensors (docs/sources.md §2.2): power_instant_w = mean power over the last step (+noise);
// power_w = the same on A100, a trailing 1 s mean on Hopper; energy_j steps every 100 ms.
// Knobs (write): power caps take effect at once as the firmware's setpoint (gpu_model.hpp:
// the SM clock falls with lag clock_tau_s and rises with clock_up_tau_s); a workload knob (a
// per-job row of the actuator table) is clamped to the job's range, rounded when the row says
// its settings are whole, and handed to the workload, which says when it applies
// (workload.hpp responds_to_knob(): gen_concurrency at once to admission, group_size from the
// next GRPO step). A knob the job does not respond to is ignored.
// Pipeline jobs (sim/pipeline_scenario.hpp, sim/cluster_pipeline.cpp) step op by op instead:
// each GPU's cap, filtered with the clock lags (clock_tau_s down, clock_up_tau_s up: the cap's
// settling time), sets its stage's clock through sim::pipeline_iteration; the 1F1B ops run in
// simulated time (sim::PipelineRun: a GPU computes at the clock in force when an op starts
// and blocks between ops) and the GPU draws, each step, its compute and blocking power over
// that step.

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "control/plant.hpp"
#include "core/rng.hpp"
#include "sim/gpu_model.hpp"
#include "sim/workload.hpp"

namespace fw::sim {

struct SimParams {
  double dt_s = 0.1;               // integration step (0.02..0.5)
  double noise_w = 1.0;            // sensor noise sd (assumption; §2.2 repeat CV 0.4 %)
  double fw_sense_tau_s = 0.3;     // firmware's power-sensing filter (assumption, §2.7)
  double clock_tau_s = 0.2;        // SM clock lag when lowering (assumption, §2.7)
  double clock_up_tau_s = 1.5;     // SM clock lag when raising (assumption, docs/simulator.md)
  double cap_margin_frac = 0.015;  // firmware setpoint below the cap (fitted, A100 sweep)
  double ambient_c = 30;           // thermal model (assumption)
  double thermal_c_per_w = 0.1;    // steady-state rise per watt (assumption)
  double thermal_tau_s = 20;       // (assumption)
};

// One GPU of a simulated cluster as the scenario places it: its model (the preset: catalogue
// facts plus the power model's fit) and its starting cap. The catalogue's entry for a GPU
// model is hw::GpuCatalogEntry.
struct ClusterGpu {
  const GpuPreset* preset = nullptr;
  std::string model;  // preset name (same as preset->name)
  double power_cap_w = 0;
};

// The settable range a job's spec gives knob q: spec.knob_min/knob_max and the row's ladder
// step; unavailable when the job's kind does not respond to q (responds_to_knob()).
KnobRange knob_range(const JobSpec& s, int q);

class Cluster : public Plant {
 public:
  Cluster(const SimParams& sim, std::vector<ClusterGpu> gpus, std::vector<JobSpec> jobs,
          uint64_t seed);

  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override;
  Status write(const Command& cmd) override;
  std::unique_ptr<Plant> clone() const override { return std::make_unique<Cluster>(*this); }

  double time_s() const { return static_cast<double>(steps_) * sim_.dt_s; }
  // Hidden truth, for tests: power over the last integration step of GPU i.
  double true_power_w(int i) const { return gpus_[i].p_inst; }
  const WorkloadState& job_state(int j) const { return jobs_[j]; }
  const JobSpec& job_spec(int j) const { return specs_[j]; }
  // Pipeline job j's iteration in force (nullptr for other jobs or before it starts).
  const PipelineIteration* pipeline_state(int j) const;
  // Pipeline job j's phase-resolved run (nullptr for other jobs): what its framework's hooks
  // report (each rank's 1F1B phase, when the current step began). Not in the Snapshot: a
  // controller sees the step count (JobReading::steps_total) only.
  const PipelineRun* pipeline_run(int j) const;

 private:
  struct Gpu {
    const GpuPreset* preset = nullptr;
    int job = -1;
    double cap_w = 0;
    FirmwareState fw;  // cap regulator: filtered load, effective clock and its target
    Load last;         // load over the last step
    double work_share = 1, offset_w = 0, noise_w = 0;  // heterogeneity (JobSpec::hetero)
    double noise_sd_w = 0, noise_rho = 0;
    double p_inst = 0;
    double pipe_cap_w = 0;     // pipeline jobs: the cap in force after settling
    double pipe_power_w = -1;  // pipeline jobs: this step's power (< 0: not a pipeline GPU)
    double energy_j = 0, energy_reported_j = 0;
    double temp_c = 30;
    std::array<double, 64> ring{};  // last n_ring step powers (1 s window)
    int ring_pos = 0;
    double ring_sum = 0;
    Rng noise;
  };
  void step();
  // Pipeline jobs (cluster_pipeline.cpp).
  struct PipeState {
    bool evaluated = false;
    std::vector<double> caps_w;            // the settled caps the iteration was evaluated with
    uint64_t stragglers_on = 0;            // bit k: straggler k in force at the evaluation
    PipelineIteration iter;                // at the settled caps: clocks, powers, busy shares
    PipelineRun run;                       // the iterations op by op (phase-resolved)
    std::vector<double> energy_j, busy_s;  // per rank, over the last step
  };
  void step_pipeline(size_t j, double t0);
  std::vector<PipeState> pipes_;  // per job (unused for other kinds)
  void init_heterogeneity(const JobSpec& s, const Rng& root);
  // JobSpec::hetero's scheduled change: the work shares drawn again with imbalance_after.
  void redraw_work_shares(const JobSpec& s);

  SimParams sim_;
  PlantInfo info_;
  std::vector<JobSpec> specs_;
  std::vector<WorkloadState> jobs_;
  std::vector<char> shares_redrawn_;  // per job: its hetero change has happened
  uint64_t seed_ = 0;
  std::vector<Gpu> gpus_;
  int64_t steps_ = 0;
  int n_ring_ = 10;
  int energy_every_ = 1;  // steps per 100 ms energy-counter update
  FirmwareParams fw_params_;
  FirmwareCoeffs fw_coeffs_;
  double a_temp_ = 0;
};

}  // namespace fw::sim

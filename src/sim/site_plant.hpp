#pragma once
// SitePlant: the site simulator (sim/site_power.hpp) behind the Plant interface, so that a
// Controller runs on it in the one control loop (control/control_loop.hpp) — the slot of the
// power-stabilisation study's controller arm (studies/stability_study.hpp).
//
// What a controller sees and commands:
// - one GpuReading per *representative* rank (plant GPU i = representative i; each stands for
//   gpus_per_row() GPUs of the site): power_w = its GPUs' mean power per GPU since the previous
//   read (the energy counter's difference), power_instant_w = the last 10 ms step, energy_j per
//   GPU, cap_w, sm_util/mem_util from the step's load, sm_clock_mhz; temp_c is NaN (no thermal
//   model);
// - one JobReading: phase of representative 0 (kIdle outside training), tokens_total and
//   steps_total (iterations whose all-reduce completed), and the job client's announcements:
//   starts_in_s / ends_in_s (the scheduled start and end of training; NaN once passed),
//   checkpoint_in_iters (the next checkpoint follows the all-reduce of that many more
//   iterations: exact, the job counts them; NaN without checkpoints or after the end) and
//   checkpoint_s (its length). No time of the coming checkpoint is announced: iterations vary
//   (jitter), a controller times it from the iterations it sees;
// - Command::power_cap_w[i]: representative i's cap (clamped to the device range); knobs are
//   ignored (the job exposes none);
// - Command::gpu_settings[i] (kGpuSettingTable, vocab/): representative i's power
//   smoothing — the first smoothing row written turns it on (unwritten rows: no floor, no ramp
//   limit, no hysteresis); a floor > 0 is clamped to the smoothing model's settable range, 0 is
//   none; a rate below 1 W/s is taken as 1; an infinite hysteresis as 0 — and its fill
//   workload (W per GPU; 0 off; at most TDP). A smoothing row on a site without a smoothing
//   model is refused (NotSupported, nothing applied); a negative value is InvalidArgument. The
//   critical rank follows representative 0 (sim/site_power.hpp). The mitigations fixed at
//   construction are the starting settings; stagger is not an actuator.
// clone() copies the whole simulation (a look-ahead controller may branch on it).

#include <memory>

#include "control/plant.hpp"
#include "sim/site_power.hpp"

namespace fw::sim {

class SitePlant : public Plant {
 public:
  // REQUIRES: validate(spec, m) ok.
  SitePlant(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed);

  const PlantInfo& info() const override { return info_; }
  Status read(double now_s, Snapshot& out) override;
  Status write(const Command& cmd) override;
  std::unique_ptr<Plant> clone() const override { return std::make_unique<SitePlant>(*this); }

  double gpus_per_row() const { return sim_.gpus_per_representative(); }
  SiteSimulator& simulator() { return sim_; }
  // Runs to the end of the site's duration and returns the run.
  SiteRun finish();

 private:
  SiteSimulator sim_;
  PlantInfo info_;
  double sm_clock_max_mhz_ = 0;
  std::vector<double> last_energy_j_;
  double last_read_s_ = 0;
};

}  // namespace fw::sim

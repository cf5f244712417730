#pragma once
// PowerSmoothingActuator: GPU power smoothing (Blackwell and newer): a power floor, a ramp-up
// and a ramp-down rate and a ramp-down hysteresis, held in preset profiles, and an on/off state.
// The NVML implementation is nvml_power_smoothing_actuator.hpp; docs/telemetry.md, "Power
// smoothing", says what NVIDIA documents and what is unverified on hardware.
//
// Contract:
// - gpus(): the GPUs managed (fixed at open). support(gpu): Ok when the GPU's smoothing can be
//   read and written; otherwise NotSupported (GPU or driver without the feature; the message
//   names the GPU model) or the error met at open. read() and set() on such a GPU return that
//   status without a device call.
// - limits(gpu): what the device allowed at open (no device call).
// - read(gpu): the settings in force: the state, the active preset profile and its parameters.
// - set(gpu, request) validates before any device call: InvalidArgument naming the field and its
//   range for a GPU not managed, a floor not given exactly once (fraction or watts), a floor
//   outside the device's settable range (NVML's 0-100 % of the TMP ceiling, narrowed by the
//   device), a floor in watts on a device that reports no TMP ceiling, or a negative or non-finite
//   rate or hysteresis. It never clamps. Then, on a GPU's first write, its settings are saved
//   (save-before-first-write) and the GPU is marked changed; the parameters go into the active
//   preset profile (which stays active), then the state is set; the settings are read back and
//   returned.
// - save(): records the settings of every supported GPU now (a second save() replaces them) and
//   marks none changed. save_with(kept) is save() with the GPUs of `kept` recorded at kept's
//   settings instead and marked changed (a restarted agent keeps what a crashed run found, whatever
//   that run put in force since); InvalidArgument, before anything is recorded, for a GPU of
//   `kept` not managed, not supported, twice, or with settings no device could hold (profile
//   outside 0..profiles-1, floor outside 0..1, a negative or non-finite rate or hysteresis).
// - changed(): the GPUs whose settings may differ from the saved ones (written by set(), or kept
//   by save_with()) since they were saved or last written back.
// - restore(): writes every saved GPU back (that profile's parameters, that profile made active,
//   the state), trying every GPU even after a failure and returning the first failure;
//   InvalidArgument when nothing is saved. restore(gpus) does the same for `gpus` only
//   (InvalidArgument, before any write, for one not saved). A GPU written back is no longer
//   changed. The record is in memory only: the owner persists saved() where a crash must not
//   lose it (the agent's restore file, runtime/restore_file.hpp) and calls restore on exit.
// - Units: watts, W/s, and the hysteresis in ms (NVML's unit for it); the floor as a fraction
//   0..1 of the TMP ceiling (NVML: percent).
// Not thread-safe: one writer per node.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

// What a device allows, read at open.
struct PowerSmoothingLimits {
  double floor_frac_min = 0.0;  // lowest settable floor, fraction of the TMP ceiling
  double floor_frac_max = 1.0;  // highest settable floor
  double tdp_w = kUnset;  // the applied TMP ceiling (W) the floor is a fraction of; NaN: unknown
  int profiles = 0;       // preset profiles: ids 0 .. profiles-1
};

// The settings in force: the state and the parameters of one preset profile.
struct PowerSmoothingSettings {
  bool enabled = false;
  int profile = -1;                   // the preset profile the parameters below belong to
  double floor_frac_of_tdp = kUnset;  // 0..1
  double ramp_up_w_per_s = kUnset;
  double ramp_down_w_per_s = kUnset;
  double ramp_down_hysteresis_ms = kUnset;
};

struct PowerSmoothingReading {
  PowerSmoothingSettings settings;
  PowerSmoothingLimits limits;
  // The floor in watts (floor fraction x TMP ceiling); NaN when the ceiling is unknown.
  double floor_w() const { return settings.floor_frac_of_tdp * limits.tdp_w; }
};

// A GPU's settings as saved (what restore() puts back), keyed by UUID where known, as SavedCap.
struct SavedSmoothing {
  int gpu = -1;
  PowerSmoothingSettings settings;
  std::string uuid = {};  // the GPU's NVML UUID where known: what a restore file is keyed by
};

// What set() is asked for. Give exactly one of floor_frac_of_tdp and floor_w.
struct PowerSmoothingRequest {
  bool enabled = true;
  double floor_frac_of_tdp = kUnset;
  double floor_w = kUnset;
  double ramp_up_w_per_s = kUnset;
  double ramp_down_w_per_s = kUnset;
  double ramp_down_hysteresis_ms = kUnset;
};

class PowerSmoothingActuator {
 public:
  virtual ~PowerSmoothingActuator() = default;

  virtual const std::vector<int>& gpus() const = 0;
  // REQUIRES: managed(gpu).
  virtual Status support(int gpu) const = 0;
  // REQUIRES: managed(gpu).
  virtual PowerSmoothingLimits limits(int gpu) const = 0;
  virtual Result<PowerSmoothingReading> read(int gpu) = 0;

  bool managed(int gpu) const;
  // The settings set() would write (profile left -1), or the reason it refuses; no device call.
  Result<PowerSmoothingSettings> validate(int gpu, const PowerSmoothingRequest& request) const;
  Result<PowerSmoothingReading> set(int gpu, const PowerSmoothingRequest& request);
  Status save();
  Status save_with(const std::vector<SavedSmoothing>& kept);
  Status restore();
  Status restore(const std::vector<int>& gpus);
  bool has_saved(int gpu) const { return saved_.count(gpu) > 0; }
  const std::map<int, PowerSmoothingSettings>& saved() const { return saved_; }
  const std::set<int>& changed() const { return changed_; }

 protected:
  // Writes `s`'s parameters into preset profile s.profile, makes that profile active when
  // `activate`, then sets the state. REQUIRES: support(gpu) ok, s validated or read back.
  virtual Status write(int gpu, const PowerSmoothingSettings& s, bool activate) = 0;

 private:
  std::map<int, PowerSmoothingSettings> saved_;  // by GPU
  std::set<int> changed_;
};

}  // namespace fw

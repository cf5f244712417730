#pragma once
// PowerCapActuator: writes per-GPU power caps, and puts back the caps it found.
//
// Contract:
// - gpus() are the device indices this actuator manages (fixed at construction/open).
// - set(gpu, cap_w) validates before writing: InvalidArgument (nothing written) for a GPU not
//   managed, a non-finite cap, or a cap outside the device's [min_w, max_w]; it never clamps.
//   On success the cap in force is read back (another agent or the firmware may hold it lower).
// - save() records the cap in force on every managed GPU now (the caps found at start, not the
//   driver's defaults); restore() writes exactly those back, trying every GPU even after a
//   failure and returning the first failure. restore() before save() is InvalidArgument; a second
//   save() replaces the record. save_with(kept) is save() with the GPUs of `kept` recorded at
//   kept's caps instead (a restarted agent keeps the caps the crashed run found, whatever it
//   has put in force since); InvalidArgument for a GPU not managed or a non-finite cap.
// - write_failures(gpu) counts the set() calls on that GPU that failed (validation included),
//   over the actuator's life: restore() and every caller's writes alike.
// - persistence_mode(gpu): the driver's persistence mode as found at open (read only: never
//   set). Off, the driver may unload when no client holds the GPU, and the power limits set go
//   with it. kUnknown where the device or library does not say (and in-memory actuators).
// - mark_lost(gpu): the GPU fell off the bus (NVML_ERROR_GPU_IS_LOST). set() on it is then
//   Unavailable without a write (not counted as a write failure) and restore() skips it: a lost
//   GPU comes back only through a reset or reboot, which puts its driver default back.
// - Watts everywhere; unit conversion belongs to the implementation's device layer.
// Not thread-safe: one writer per node (the caller serialises).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

// What the device allows; NaN when it does not say (set() then refuses: not supported).
struct CapConstraints {
  double min_w = kUnset;
  double max_w = kUnset;
  double default_w = kUnset;  // the driver's boot default (informational: restore() ignores it)
};

struct CapWrite {
  double cap_w = kUnset;       // written
  double enforced_w = kUnset;  // read back after the write
};

enum class PersistenceMode { kUnknown, kOff, kOn };

struct SavedCap {
  int gpu = -1;
  double cap_w = kUnset;
  std::string uuid = {};  // the GPU's NVML UUID where known: what a restore file is keyed by
};

class PowerCapActuator {
 public:
  virtual ~PowerCapActuator() = default;

  virtual const std::vector<int>& gpus() const = 0;
  // REQUIRES: managed(gpu).
  virtual CapConstraints constraints(int gpu) const = 0;
  // The cap in force now (the management limit the device was last given). REQUIRES: managed.
  virtual Result<double> cap_w(int gpu) = 0;

  // REQUIRES: managed(gpu).
  virtual PersistenceMode persistence_mode(int) const { return PersistenceMode::kUnknown; }

  bool managed(int gpu) const;
  Result<CapWrite> set(int gpu, double cap_w);
  int64_t write_failures(int gpu) const;
  Status save();
  Status save_with(const std::vector<SavedCap>& kept);
  Status restore();
  bool has_saved() const { return has_saved_; }
  void mark_lost(int gpu);
  bool lost(int gpu) const;
  const std::vector<SavedCap>& saved() const { return saved_; }

 protected:
  // Writes a validated cap and reads the enforced cap back. REQUIRES: managed(gpu), cap_w in
  // constraints(gpu).
  virtual Result<CapWrite> write(int gpu, double cap_w) = 0;

 private:
  Result<CapWrite> checked_write(int gpu, double cap_w);

  std::vector<SavedCap> saved_;
  bool has_saved_ = false;
  std::map<int, int64_t> write_failures_;  // by GPU; absent: none
  std::vector<int> lost_;
};

}  // namespace fw

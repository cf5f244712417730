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
// - Watts everywhere; unit conversion belongs to the implementation's device layer.
// Not thread-safe: one writer per node (the caller serialises).

#include <vector>

#include "core/status.hpp"
#include "telemetry/snapshot.hpp"

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

struct SavedCap {
  int gpu = -1;
  double cap_w = kUnset;
};

class PowerCapActuator {
 public:
  virtual ~PowerCapActuator() = default;

  virtual const std::vector<int>& gpus() const = 0;
  // REQUIRES: managed(gpu).
  virtual CapConstraints constraints(int gpu) const = 0;
  // The cap in force now (the management limit the device was last given). REQUIRES: managed.
  virtual Result<double> cap_w(int gpu) = 0;

  bool managed(int gpu) const;
  Result<CapWrite> set(int gpu, double cap_w);
  Status save();
  Status save_with(const std::vector<SavedCap>& kept);
  Status restore();
  bool has_saved() const { return has_saved_; }
  const std::vector<SavedCap>& saved() const { return saved_; }

 protected:
  // Writes a validated cap and reads the enforced cap back. REQUIRES: managed(gpu), cap_w in
  // constraints(gpu).
  virtual Result<CapWrite> write(int gpu, double cap_w) = 0;

 private:
  std::vector<SavedCap> saved_;
  bool has_saved_ = false;
};

}  // namespace fw

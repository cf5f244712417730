#pragma once
// NvmlPowerCapActuator: PowerCapActuator over NVML (the dlopen'ed binding in
// nvml/nvml_library.hpp). NVML's mW are converted to W by nvml::kSiPerMilli (nvml_api.hpp).
//
// open() takes each managed GPU's handle and its cap constraints
// (nvmlDeviceGetPowerManagementLimitConstraints, ...DefaultLimit; NOT_SUPPORTED leaves them
// NaN, so set() on that GPU is NotSupported). cap_w() reads the management limit
// (nvmlDeviceGetPowerManagementLimit; the enforced limit when the library lacks it). A write is
// nvmlDeviceSetPowerManagementLimit (rounded to the nearest mW) then
// nvmlDeviceGetEnforcedPowerLimit. Without root the write is PermissionDenied. Every NVML
// return code goes through nvml::NvmlLibrary::check (names the call and GPU). open() also reads
// each GPU's persistence mode (nvmlDeviceGetPersistenceMode, read only; any error or a library
// without the call leaves it kUnknown, never an open error).
//
// The library may be shared with an NvmlGpuSource's (NVML is thread-safe; this object is not).

#include <memory>
#include <vector>

#include "actuation/power_cap_actuator.hpp"
#include "nvml/nvml_library.hpp"

namespace fw {

class NvmlPowerCapActuator : public PowerCapActuator {
 public:
  // Manages `gpus` (NVML indices; empty: all). NotFound for an index NVML does not have;
  // NotSupported when the library has no nvmlDeviceSetPowerManagementLimit.
  static Result<std::unique_ptr<NvmlPowerCapActuator>> open(
      std::shared_ptr<const nvml::NvmlLibrary> lib, const std::vector<int>& gpus = {});

  const std::vector<int>& gpus() const override { return ids_; }
  CapConstraints constraints(int gpu) const override { return dev(gpu).constraints; }
  Result<double> cap_w(int gpu) override;
  PersistenceMode persistence_mode(int gpu) const override { return dev(gpu).persistence; }

 protected:
  Result<CapWrite> write(int gpu, double cap_w) override;

 private:
  struct Device {
    int gpu = -1;
    nvml::Device handle = nullptr;
    CapConstraints constraints;
    PersistenceMode persistence = PersistenceMode::kUnknown;
  };
  explicit NvmlPowerCapActuator(std::shared_ptr<const nvml::NvmlLibrary> lib)
      : lib_(std::move(lib)) {}
  const Device& dev(int gpu) const;

  std::shared_ptr<const nvml::NvmlLibrary> lib_;
  std::vector<int> ids_;
  std::vector<Device> devs_;  // same order as ids_
};

}  // namespace fw

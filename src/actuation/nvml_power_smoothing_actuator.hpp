#pragma once
// NvmlPowerSmoothingActuator: PowerSmoothingActuator over NVML (nvml/nvml_library.hpp).
//
// Writes: nvmlDevicePowerSmoothingUpdatePresetProfileParam (floor in percent, rates in W/s,
// hysteresis in ms), nvmlDevicePowerSmoothingActivatePresetProfile (restore only) and
// nvmlDevicePowerSmoothingSetState; every one requires root (PermissionDenied otherwise, naming
// the call and GPU). NVML has no getter for these: reads are the NVML_FI_PWR_SMOOTHING_* field
// values (nvmlDeviceGetFieldValues; the profile fields with scopeId = the profile id), whose
// ramp rates are in mW/s and are converted to W/s here, once.
//
// The field ids depend on the driver (power_smoothing_field_base below), so open() reads the
// driver version (nvmlSystemGetDriverVersion), and every read checks that the values are
// plausible for that layout (state 0/1, active profile below the profile count, percentages
// within 0-100, rates >= 0): a GPU that fails the check at open is NotSupported, so nothing is
// written that could not be read back and restored.
//
// open() fails NotSupported when the library lacks any of the three set calls,
// nvmlDeviceGetFieldValues or nvmlSystemGetDriverVersion (an older driver: never a crash), or
// when the driver's branch is unknown; NotFound for a GPU index NVML does not have. Per GPU,
// support() is NotSupported, naming the GPU model, when NVML_FI_PWR_SMOOTHING_ENABLED is
// NOT_SUPPORTED on it (NVIDIA documents the feature for Blackwell and newer).
// The library may be shared with other NVML users (NVML is thread-safe; this object is not).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "actuation/power_smoothing_actuator.hpp"
#include "nvml/nvml_library.hpp"

namespace fw {

// The id of NVML_FI_PWR_SMOOTHING_ENABLED (the first of the block) on a driver whose
// nvmlSystemGetDriverVersion is `driver_version` ("580.65.06"): 256 on branches 575-589 (the
// nvml.h of CUDA 12.9 and 13.0, which those branches ship with), 251 on 570-574 and from 590 on
// (CUDA 12.8's and 13.1's nvml.h); 0 when the version does not parse or is older than 570 (no
// power smoothing).
unsigned power_smoothing_field_base(std::string_view driver_version);

class NvmlPowerSmoothingActuator : public PowerSmoothingActuator {
 public:
  static Result<std::unique_ptr<NvmlPowerSmoothingActuator>> open(
      std::shared_ptr<const nvml::NvmlLibrary> lib, const std::vector<int>& gpus = {});

  const std::vector<int>& gpus() const override { return ids_; }
  Status support(int gpu) const override { return dev(gpu).support; }
  PowerSmoothingLimits limits(int gpu) const override { return dev(gpu).limits; }
  Result<PowerSmoothingReading> read(int gpu) override;

  const std::string& driver_version() const { return driver_version_; }
  unsigned field_base() const { return field_base_; }

 protected:
  Status write(int gpu, const PowerSmoothingSettings& s, bool activate) override;

 private:
  struct Device {
    int gpu = -1;
    nvml::Device handle = nullptr;
    std::string model;  // nvmlDeviceGetName, for messages
    Status support;
    PowerSmoothingLimits limits;
  };
  explicit NvmlPowerSmoothingActuator(std::shared_ptr<const nvml::NvmlLibrary> lib)
      : lib_(std::move(lib)) {}
  const Device& dev(int gpu) const;
  // Reads d's limits (fields at scope 0) and checks them and a first read_device(): the status
  // support() will give.
  Status read_limits(Device& d) const;
  Result<PowerSmoothingReading> read_device(const Device& d) const;
  // "GPU 1 (NVIDIA B200)".
  std::string who(const Device& d) const;

  std::shared_ptr<const nvml::NvmlLibrary> lib_;
  std::string driver_version_;
  unsigned field_base_ = 0;
  std::vector<int> ids_;
  std::vector<Device> devs_;  // same order as ids_
};

}  // namespace fw

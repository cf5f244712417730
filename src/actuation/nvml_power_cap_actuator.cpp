#include "actuation/nvml_power_cap_actuator.hpp"

#include <cmath>
#include <cstdlib>
#include <string>

namespace fw {

Result<std::unique_ptr<NvmlPowerCapActuator>> NvmlPowerCapActuator::open(
    std::shared_ptr<const nvml::NvmlLibrary> lib, const std::vector<int>& gpus) {
  std::unique_ptr<NvmlPowerCapActuator> a(new NvmlPowerCapActuator(std::move(lib)));
  const nvml::NvmlLibrary& l = *a->lib_;
  const nvml::NvmlFunctions& f = l.fn();
  if (!f.device_set_power_limit || !f.device_get_enforced_power_limit) {
    return Status::NotSupported(l.path() +
                                ": no nvmlDeviceSetPowerManagementLimit / "
                                "nvmlDeviceGetEnforcedPowerLimit: caps cannot be written");
  }
  FW_ASSIGN_OR_RETURN(std::vector<int> selected, l.select_gpus(gpus));
  for (int g : selected) {
    if (a->managed(g)) continue;
    Device d;
    d.gpu = g;
    FW_RETURN_IF_ERROR(
        l.check(f.device_get_handle_by_index(static_cast<unsigned int>(g), &d.handle),
                "nvmlDeviceGetHandleByIndex", g));
    if (f.device_get_power_limit_constraints) {
      unsigned int min_mw = 0, max_mw = 0;
      const nvml::Return rc = f.device_get_power_limit_constraints(d.handle, &min_mw, &max_mw);
      if (rc != nvml::kErrorNotSupported) {
        FW_RETURN_IF_ERROR(l.check(rc, "nvmlDeviceGetPowerManagementLimitConstraints", g));
        d.constraints.min_w = min_mw * nvml::kSiPerMilli;
        d.constraints.max_w = max_mw * nvml::kSiPerMilli;
      }
    }
    if (f.device_get_power_default_limit) {
      unsigned int mw = 0;
      const nvml::Return rc = f.device_get_power_default_limit(d.handle, &mw);
      if (rc != nvml::kErrorNotSupported) {
        FW_RETURN_IF_ERROR(l.check(rc, "nvmlDeviceGetPowerManagementDefaultLimit", g));
        d.constraints.default_w = mw * nvml::kSiPerMilli;
      }
    }
    if (f.device_get_persistence_mode) {
      int mode = nvml::kFeatureDisabled;
      if (f.device_get_persistence_mode(d.handle, &mode) == nvml::kSuccess) {
        d.persistence =
            mode == nvml::kFeatureEnabled ? PersistenceMode::kOn : PersistenceMode::kOff;
      }
    }
    a->ids_.push_back(g);
    a->devs_.push_back(d);
  }
  return a;
}

const NvmlPowerCapActuator::Device& NvmlPowerCapActuator::dev(int gpu) const {
  for (const Device& d : devs_) {
    if (d.gpu == gpu) return d;
  }
  std::abort();  // REQUIRES violated: not a managed GPU
}

Result<double> NvmlPowerCapActuator::cap_w(int gpu) {
  if (!managed(gpu)) {
    return Status::InvalidArgument("read cap: GPU " + std::to_string(gpu) + " not managed");
  }
  const Device& d = dev(gpu);
  const nvml::NvmlFunctions& f = lib_->fn();
  unsigned int mw = 0;
  if (f.device_get_power_limit) {
    FW_RETURN_IF_ERROR(lib_->check(f.device_get_power_limit(d.handle, &mw),
                                   "nvmlDeviceGetPowerManagementLimit", gpu));
  } else {
    FW_RETURN_IF_ERROR(lib_->check(f.device_get_enforced_power_limit(d.handle, &mw),
                                   "nvmlDeviceGetEnforcedPowerLimit", gpu));
  }
  return mw * nvml::kSiPerMilli;
}

Result<CapWrite> NvmlPowerCapActuator::write(int gpu, double cap_w) {
  const Device& d = dev(gpu);
  const nvml::NvmlFunctions& f = lib_->fn();
  const auto mw = static_cast<unsigned int>(std::llround(cap_w / nvml::kSiPerMilli));
  FW_RETURN_IF_ERROR(lib_->check(f.device_set_power_limit(d.handle, mw),
                                 "nvmlDeviceSetPowerManagementLimit", gpu));
  unsigned int enforced_mw = 0;
  FW_RETURN_IF_ERROR(lib_->check(f.device_get_enforced_power_limit(d.handle, &enforced_mw),
                                 "nvmlDeviceGetEnforcedPowerLimit", gpu));
  return CapWrite{mw * nvml::kSiPerMilli, enforced_mw * nvml::kSiPerMilli};
}

}  // namespace fw

#pragma once
// Loads the NVML shared library at run time and resolves the functions flexwatt uses.
//
// Search order: the path in FLEXWATT_NVML_LIBRARY when set (tests point it at the fake
// library), else libnvidia-ml.so.1, else libnvidia-ml.so. A library that resolves from a
// directory named stubs/ (the CUDA toolkit's link-time stub, which has no driver behind it) is
// rejected. Versioned symbols are preferred with a fallback to the older name
// (nvmlInit_v2 -> nvmlInit, nvmlDeviceGetHandleByIndex_v2 -> ...). Optional functions may be
// null. load() calls nvmlInit; the destructor calls nvmlShutdown and unloads.
// Thread-safety: the object is immutable after load(); NVML itself is thread-safe.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.hpp"
#include "nvml/nvml_api.hpp"

namespace fw::nvml {

inline constexpr const char* kNvmlLibraryEnv = "FLEXWATT_NVML_LIBRARY";

// Resolved entry points. Required ones are never null after load(); optional ones may be.
struct NvmlFunctions {
  nvml::InitFn init = nullptr;
  nvml::ShutdownFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;  // optional
  nvml::DeviceGetCountFn device_get_count = nullptr;
  nvml::DeviceGetHandleByIndexFn device_get_handle_by_index = nullptr;
  nvml::DeviceGetNameFn device_get_name = nullptr;                                 // optional
  nvml::DeviceGetNameFn device_get_uuid = nullptr;                                 // optional
  nvml::DeviceGetFieldValuesFn device_get_field_values = nullptr;                  // optional
  nvml::DeviceGetUintFn device_get_power_usage = nullptr;                          // optional
  nvml::DeviceGetUllFn device_get_total_energy_consumption = nullptr;              // optional
  nvml::DeviceGetUintFn device_get_enforced_power_limit = nullptr;                 // optional
  nvml::DeviceGetUintFn device_get_power_limit = nullptr;                          // optional
  nvml::DeviceGetLimitConstraintsFn device_get_power_limit_constraints = nullptr;  // optional
  nvml::DeviceGetUintFn device_get_power_default_limit = nullptr;                  // optional
  nvml::DeviceGetUtilizationFn device_get_utilization_rates = nullptr;             // optional
  nvml::DeviceGetClockInfoFn device_get_clock_info = nullptr;                      // optional
  nvml::DeviceGetTemperatureFn device_get_temperature = nullptr;                   // optional
  nvml::DeviceGetUllFn device_get_clock_event_reasons = nullptr;                   // optional
  nvml::DeviceSetPowerLimitFn device_set_power_limit = nullptr;                    // optional
  // nvmlDeviceGetPersistenceMode: read only (flexwatt never sets persistence mode).
  nvml::DeviceGetEnableStateFn device_get_persistence_mode = nullptr;  // optional
  nvml::SystemGetDriverVersionFn system_get_driver_version = nullptr;  // optional
  // Power smoothing (drivers from R570 on; absent from older ones): optional, root-only writes.
  nvml::DevicePowerSmoothingProfileFn device_power_smoothing_activate_preset_profile = nullptr;
  nvml::DevicePowerSmoothingProfileFn device_power_smoothing_update_preset_profile_param = nullptr;
  nvml::DevicePowerSmoothingSetStateFn device_power_smoothing_set_state = nullptr;
};

class NvmlLibrary {
 public:
  // Loads from FLEXWATT_NVML_LIBRARY or the default names, then calls nvmlInit.
  // Unavailable with one line saying what was tried when no usable library is found.
  static Result<std::unique_ptr<NvmlLibrary>> load();
  // Loads exactly `path` (a file path or a bare soname), then calls nvmlInit.
  static Result<std::unique_ptr<NvmlLibrary>> load_path(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const NvmlFunctions& fn() const { return fn_; }
  // The file the library was resolved from.
  const std::string& path() const { return path_; }
  // Which symbol names were bound, for diagnostics: e.g. "nvmlInit_v2".
  const std::string& init_symbol() const { return init_symbol_; }
  const std::string& clock_reasons_symbol() const { return reasons_symbol_; }

  // The one checker for every NVML return code. Ok for NVML_SUCCESS; otherwise a Status whose
  // message names the call and the GPU ("nvmlDeviceGetPowerUsage (GPU 1): GPU is lost
  // [NVML_ERROR_GPU_IS_LOST]"). gpu < 0 means a call not tied to one GPU.
  Status check(nvml::Return rc, std::string_view call, int gpu) const;
  // The GPUs to manage: `requested` (NVML indices; empty: every GPU NVML reports), each checked
  // against nvmlDeviceGetCount. NotFound naming the index and the valid range. The one GPU
  // selection of the telemetry source and the cap writer.
  Result<std::vector<int>> select_gpus(const std::vector<int>& requested) const;

 private:
  NvmlLibrary() = default;
  static Result<std::unique_ptr<NvmlLibrary>> open_one(const std::string& name);
  Status init();

  void* handle_ = nullptr;
  bool initialised_ = false;
  std::string path_;
  std::string init_symbol_;
  std::string reasons_symbol_;
  NvmlFunctions fn_;
};

// Status code for an NVML return code: GPU lost, driver not loaded and similar -> Unavailable;
// not supported -> NotSupported; no permission -> PermissionDenied; invalid argument ->
// InvalidArgument; anything else -> Internal.
StatusCode nvml_status_code(nvml::Return rc);
// "NVML_ERROR_GPU_IS_LOST", or "NVML return code N" for codes we do not name.
std::string nvml_return_name(nvml::Return rc);

}  // namespace fw::nvml

#include "nvml/nvml_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace fw::nvml {
namespace {

struct CodeName {
  nvml::Return rc;
  const char* name;
  const char* text;
};

// Our own short descriptions; nvmlErrorString is not needed to produce a clear message.
constexpr CodeName kCodeNames[] = {
    {nvml::kSuccess, "NVML_SUCCESS", "success"},
    {nvml::kErrorUninitialized, "NVML_ERROR_UNINITIALIZED", "NVML not initialised"},
    {nvml::kErrorInvalidArgument, "NVML_ERROR_INVALID_ARGUMENT", "invalid argument"},
    {nvml::kErrorNotSupported, "NVML_ERROR_NOT_SUPPORTED", "not supported by this device"},
    {nvml::kErrorNoPermission, "NVML_ERROR_NO_PERMISSION", "no permission"},
    {nvml::kErrorAlreadyInitialized, "NVML_ERROR_ALREADY_INITIALIZED", "already initialised"},
    {nvml::kErrorNotFound, "NVML_ERROR_NOT_FOUND", "not found"},
    {nvml::kErrorInsufficientSize, "NVML_ERROR_INSUFFICIENT_SIZE", "buffer too small"},
    {nvml::kErrorInsufficientPower, "NVML_ERROR_INSUFFICIENT_POWER",
     "external power cables not attached"},
    {nvml::kErrorDriverNotLoaded, "NVML_ERROR_DRIVER_NOT_LOADED", "NVIDIA driver not loaded"},
    {nvml::kErrorTimeout, "NVML_ERROR_TIMEOUT", "timeout"},
    {nvml::kErrorIrqIssue, "NVML_ERROR_IRQ_ISSUE", "interrupt issue"},
    {nvml::kErrorLibraryNotFound, "NVML_ERROR_LIBRARY_NOT_FOUND", "library not found"},
    {nvml::kErrorFunctionNotFound, "NVML_ERROR_FUNCTION_NOT_FOUND",
     "function not implemented by this driver"},
    {nvml::kErrorCorruptedInforom, "NVML_ERROR_CORRUPTED_INFOROM", "infoROM corrupted"},
    {nvml::kErrorGpuIsLost, "NVML_ERROR_GPU_IS_LOST", "GPU is lost (fell off the bus)"},
    {nvml::kErrorResetRequired, "NVML_ERROR_RESET_REQUIRED", "GPU needs a reset"},
    {nvml::kErrorOperatingSystem, "NVML_ERROR_OPERATING_SYSTEM", "blocked by the operating system"},
    {nvml::kErrorLibRmVersionMismatch, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "driver/library version mismatch"},
    {nvml::kErrorInUse, "NVML_ERROR_IN_USE", "GPU in use"},
    {nvml::kErrorMemory, "NVML_ERROR_MEMORY", "out of memory"},
    {nvml::kErrorNoData, "NVML_ERROR_NO_DATA", "no data"},
    {nvml::kErrorInsufficientResources, "NVML_ERROR_INSUFFICIENT_RESOURCES",
     "insufficient resources"},
    {nvml::kErrorArgumentVersionMismatch, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "argument version mismatch"},
    {nvml::kErrorDeprecated, "NVML_ERROR_DEPRECATED", "deprecated"},
    {nvml::kErrorNotReady, "NVML_ERROR_NOT_READY", "not ready"},
    {nvml::kErrorGpuNotFound, "NVML_ERROR_GPU_NOT_FOUND", "GPU not found"},
    {nvml::kErrorInvalidState, "NVML_ERROR_INVALID_STATE", "invalid state"},
    {nvml::kErrorUnknown, "NVML_ERROR_UNKNOWN", "unknown driver error"},
};

const CodeName* find_code(nvml::Return rc) {
  for (const CodeName& c : kCodeNames) {
    if (c.rc == rc) return &c;
  }
  return nullptr;
}

bool is_stub_path(const std::string& p) {
  if (p.find("/stubs/") != std::string::npos) return true;
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(p, ec);
  return !ec && real.string().find("/stubs/") != std::string::npos;
}

// Resolves the first of `names` present in the library; records which one.
template <typename Fn>
Fn resolve(void* handle, std::initializer_list<const char*> names, std::string* bound = nullptr) {
  for (const char* n : names) {
    if (void* p = dlsym(handle, n)) {
      if (bound) *bound = n;
      return reinterpret_cast<Fn>(p);
    }
  }
  return nullptr;
}

}  // namespace

StatusCode nvml_status_code(nvml::Return rc) {
  switch (rc) {
    case nvml::kSuccess:
      return StatusCode::kOk;
    case nvml::kErrorNotSupported:
    case nvml::kErrorFunctionNotFound:
      return StatusCode::kNotSupported;
    case nvml::kErrorNoPermission:
    case nvml::kErrorOperatingSystem:
      return StatusCode::kPermissionDenied;
    case nvml::kErrorInvalidArgument:
      return StatusCode::kInvalidArgument;
    case nvml::kErrorGpuIsLost:
    case nvml::kErrorResetRequired:
    case nvml::kErrorDriverNotLoaded:
    case nvml::kErrorLibraryNotFound:
    case nvml::kErrorUninitialized:
    case nvml::kErrorLibRmVersionMismatch:
    case nvml::kErrorTimeout:
    case nvml::kErrorIrqIssue:
    case nvml::kErrorInsufficientPower:
    case nvml::kErrorInUse:
    case nvml::kErrorNotReady:
    case nvml::kErrorGpuNotFound:
    case nvml::kErrorNoData:
      return StatusCode::kUnavailable;
    default:
      return StatusCode::kInternal;
  }
}

std::string nvml_return_name(nvml::Return rc) {
  const CodeName* c = find_code(rc);
  return c ? c->name : "NVML return code " + std::to_string(rc);
}

Status NvmlLibrary::check(nvml::Return rc, std::string_view call, int gpu) const {
  if (rc == nvml::kSuccess) return Status::Ok();
  std::string msg(call);
  if (gpu >= 0) msg += " (GPU " + std::to_string(gpu) + ")";
  const CodeName* c = find_code(rc);
  msg += ": ";
  msg += c ? c->text : "error";
  msg += " [" + nvml_return_name(rc) + "]";
  return Status(nvml_status_code(rc), msg);
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::load() {
  if (const char* env = std::getenv(kNvmlLibraryEnv); env && *env) {
    auto lib = load_path(env);
    if (!lib.ok()) return lib.status().with_context(std::string(kNvmlLibraryEnv) + "=" + env);
    return lib;
  }
  std::string tried;
  for (const char* name : {"libnvidia-ml.so.1", "libnvidia-ml.so"}) {
    auto lib = open_one(name);
    if (lib.ok()) {
      FW_RETURN_IF_ERROR(lib.value()->init());
      return lib;
    }
    if (!tried.empty()) tried += "; ";
    tried += lib.status().message();
  }
  return Status::Unavailable("NVML not available: " + tried);
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::load_path(const std::string& path) {
  FW_ASSIGN_OR_RETURN(std::unique_ptr<NvmlLibrary> lib, open_one(path));
  FW_RETURN_IF_ERROR(lib->init());
  return lib;
}

Status NvmlLibrary::init() {
  FW_RETURN_IF_ERROR(check(fn_.init(), init_symbol_, -1).with_context("NVML " + path_));
  initialised_ = true;
  return Status::Ok();
}

Result<std::unique_ptr<NvmlLibrary>> NvmlLibrary::open_one(const std::string& name) {
  dlerror();
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* err = dlerror();
    // dlerror() already names the file ("NAME: cannot open shared object file: ...").
    return Status::Unavailable(err ? std::string(err) : name + ": cannot load");
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary());
  lib->handle_ = handle;  // closed by the destructor on every path below
  NvmlFunctions& f = lib->fn_;
  f.init = resolve<nvml::InitFn>(handle, {"nvmlInit_v2", "nvmlInit"}, &lib->init_symbol_);

  // Where did the library really come from? dladdr on a resolved symbol, else the link map.
  std::string path = name;
  Dl_info info{};
  if (f.init && dladdr(reinterpret_cast<void*>(f.init), &info) && info.dli_fname) {
    path = info.dli_fname;
  } else if (link_map* lm = nullptr;
             dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) {
    path = lm->l_name;
  }
  lib->path_ = path;
  if (is_stub_path(path)) {
    return Status::Unavailable(name + ": resolved to the CUDA toolkit stub " + path +
                               " (no NVIDIA driver behind it)");
  }

  f.shutdown = resolve<nvml::ShutdownFn>(handle, {"nvmlShutdown"});
  f.error_string = resolve<nvml::ErrorStringFn>(handle, {"nvmlErrorString"});
  f.device_get_count =
      resolve<nvml::DeviceGetCountFn>(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
  f.device_get_handle_by_index = resolve<nvml::DeviceGetHandleByIndexFn>(
      handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
  f.device_get_name = resolve<nvml::DeviceGetNameFn>(handle, {"nvmlDeviceGetName"});
  f.device_get_uuid = resolve<nvml::DeviceGetNameFn>(handle, {"nvmlDeviceGetUUID"});
  f.device_get_field_values =
      resolve<nvml::DeviceGetFieldValuesFn>(handle, {"nvmlDeviceGetFieldValues"});
  f.device_get_power_usage = resolve<nvml::DeviceGetUintFn>(handle, {"nvmlDeviceGetPowerUsage"});
  f.device_get_total_energy_consumption =
      resolve<nvml::DeviceGetUllFn>(handle, {"nvmlDeviceGetTotalEnergyConsumption"});
  f.device_get_enforced_power_limit =
      resolve<nvml::DeviceGetUintFn>(handle, {"nvmlDeviceGetEnforcedPowerLimit"});
  f.device_get_power_limit =
      resolve<nvml::DeviceGetUintFn>(handle, {"nvmlDeviceGetPowerManagementLimit"});
  f.device_get_power_limit_constraints = resolve<nvml::DeviceGetLimitConstraintsFn>(
      handle, {"nvmlDeviceGetPowerManagementLimitConstraints"});
  f.device_get_power_default_limit =
      resolve<nvml::DeviceGetUintFn>(handle, {"nvmlDeviceGetPowerManagementDefaultLimit"});
  f.device_get_utilization_rates =
      resolve<nvml::DeviceGetUtilizationFn>(handle, {"nvmlDeviceGetUtilizationRates"});
  f.device_get_clock_info = resolve<nvml::DeviceGetClockInfoFn>(handle, {"nvmlDeviceGetClockInfo"});
  f.device_get_temperature =
      resolve<nvml::DeviceGetTemperatureFn>(handle, {"nvmlDeviceGetTemperature"});
  f.device_get_clock_event_reasons = resolve<nvml::DeviceGetUllFn>(
      handle,
      {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"},
      &lib->reasons_symbol_);
  f.device_set_power_limit =
      resolve<nvml::DeviceSetPowerLimitFn>(handle, {"nvmlDeviceSetPowerManagementLimit"});
  f.device_get_persistence_mode =
      resolve<nvml::DeviceGetEnableStateFn>(handle, {"nvmlDeviceGetPersistenceMode"});
  f.system_get_driver_version =
      resolve<nvml::SystemGetDriverVersionFn>(handle, {"nvmlSystemGetDriverVersion"});
  f.device_power_smoothing_activate_preset_profile = resolve<nvml::DevicePowerSmoothingProfileFn>(
      handle, {"nvmlDevicePowerSmoothingActivatePresetProfile"});
  f.device_power_smoothing_update_preset_profile_param =
      resolve<nvml::DevicePowerSmoothingProfileFn>(
          handle, {"nvmlDevicePowerSmoothingUpdatePresetProfileParam"});
  f.device_power_smoothing_set_state =
      resolve<nvml::DevicePowerSmoothingSetStateFn>(handle, {"nvmlDevicePowerSmoothingSetState"});

  std::string missing;
  if (!f.init) missing += " nvmlInit";
  if (!f.shutdown) missing += " nvmlShutdown";
  if (!f.device_get_count) missing += " nvmlDeviceGetCount";
  if (!f.device_get_handle_by_index) missing += " nvmlDeviceGetHandleByIndex";
  if (!f.device_get_power_usage && !f.device_get_field_values)
    missing += " nvmlDeviceGetPowerUsage";
  if (!missing.empty()) {
    return Status::Unavailable(path + ": not a usable NVML library (missing" + missing + ")");
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  if (initialised_ && fn_.shutdown) fn_.shutdown();
  if (handle_) dlclose(handle_);
}

Result<std::vector<int>> NvmlLibrary::select_gpus(const std::vector<int>& requested) const {
  unsigned int count = 0;
  FW_RETURN_IF_ERROR(check(fn_.device_get_count(&count), "nvmlDeviceGetCount", -1));
  std::vector<int> selected = requested;
  if (selected.empty()) {
    for (unsigned int i = 0; i < count; ++i) selected.push_back(static_cast<int>(i));
  }
  for (int g : selected) {
    if (g < 0 || g >= static_cast<int>(count)) {
      return Status::NotFound("unknown GPU index " + std::to_string(g) + ": NVML reports " +
                              std::to_string(count) + " GPU(s)" +
                              (count ? ", indices 0-" + std::to_string(count - 1) : ""));
    }
  }
  return selected;
}

}  // namespace fw::nvml

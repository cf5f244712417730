#pragma once
// Our own minimal declarations of the NVML C API: only the types, constants and function
// signatures flexwatt uses. No NVIDIA SDK header is needed; the library is loaded at run time
// (hw/nvml/nvml_library.hpp). Values are from the public NVML API reference
// (docs.nvidia.com/deploy/nvml-api). The fake library in tests/telemetry/fake_nvml implements
// the same declarations.
//
// Units used by NVML: power and limits in milliwatts, energy in millijoules, clocks in MHz,
// temperature in degrees C, utilisation in percent. Convert once, in nvml_source.cpp.

#include <cstdint>

namespace fw::nvml {

// nvmlReturn_t
using Return = int;
// NVML reports and takes milliwatts and millijoules; flexwatt is SI inside. This is the one
// conversion factor, used by the telemetry source and the cap writer alike.
inline constexpr double kSiPerMilli = 1e-3;  // mW -> W, mJ -> J

inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorUninitialized = 1;
inline constexpr Return kErrorInvalidArgument = 2;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorNoPermission = 4;
inline constexpr Return kErrorAlreadyInitialized = 5;
inline constexpr Return kErrorNotFound = 6;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorInsufficientPower = 8;
inline constexpr Return kErrorDriverNotLoaded = 9;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorIrqIssue = 11;
inline constexpr Return kErrorLibraryNotFound = 12;
inline constexpr Return kErrorFunctionNotFound = 13;
inline constexpr Return kErrorCorruptedInforom = 14;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr Return kErrorResetRequired = 16;
inline constexpr Return kErrorOperatingSystem = 17;
inline constexpr Return kErrorLibRmVersionMismatch = 18;
inline constexpr Return kErrorInUse = 19;
inline constexpr Return kErrorMemory = 20;
inline constexpr Return kErrorNoData = 21;
inline constexpr Return kErrorVgpuEccNotSupported = 22;
inline constexpr Return kErrorInsufficientResources = 23;
inline constexpr Return kErrorFreqNotSupported = 24;
inline constexpr Return kErrorArgumentVersionMismatch = 25;
inline constexpr Return kErrorDeprecated = 26;
inline constexpr Return kErrorNotReady = 27;
inline constexpr Return kErrorGpuNotFound = 28;
inline constexpr Return kErrorInvalidState = 29;
inline constexpr Return kErrorUnknown = 999;

// Opaque device handle (nvmlDevice_t).
struct DeviceOpaque;
using Device = DeviceOpaque*;

// nvmlEnableState_t (persistence mode and other on/off features).
inline constexpr int kFeatureDisabled = 0;
inline constexpr int kFeatureEnabled = 1;

// nvmlClockType_t / nvmlTemperatureSensors_t values we use.
inline constexpr int kClockSm = 1;
inline constexpr int kTemperatureGpu = 0;

// Field ids (NVML_FI_DEV_*) and the GPU power scope.
inline constexpr unsigned kFieldPowerAverage = 185;  // NVML_FI_DEV_POWER_AVERAGE, mW (1 s)
inline constexpr unsigned kFieldPowerInstant = 186;  // NVML_FI_DEV_POWER_INSTANT, mW
inline constexpr unsigned kPowerScopeGpu = 0;        // NVML_POWER_SCOPE_GPU

inline constexpr unsigned kDeviceNameBufferSize = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
inline constexpr unsigned kDeviceUuidBufferSize = 96;  // NVML_DEVICE_UUID_V2_BUFFER_SIZE

// nvmlValueType_t
enum ValueType : int {
  kValueDouble = 0,
  kValueUnsignedInt = 1,
  kValueUnsignedLong = 2,
  kValueUnsignedLongLong = 3,
  kValueSignedLongLong = 4,
  kValueSignedInt = 5,
  kValueUnsignedShort = 6,
};

// nvmlValue_t
union Value {
  double d_val;
  unsigned int ui_val;
  unsigned long ul_val;        // NOLINT(runtime/int): matches the C layout
  unsigned long long ull_val;  // NOLINT(runtime/int)
  long long sll_val;           // NOLINT(runtime/int)
  int si_val;
  unsigned short us_val;  // NOLINT(runtime/int)
};

// nvmlFieldValue_t (40 bytes on LP64).
struct FieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp_us;  // NOLINT(runtime/int)
  long long latency_us;    // NOLINT(runtime/int)
  int value_type;          // ValueType
  Return nvml_return;
  Value value;
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t layout");

// nvmlUtilization_t: percent over the driver's last sample period.
struct Utilization {
  unsigned int gpu;
  unsigned int memory;
};
static_assert(sizeof(Utilization) == 8, "nvmlUtilization_t layout");

// Function signatures (C calling convention; names in nvml_library.cpp).
extern "C" {
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetNameFn = Return (*)(Device, char*, unsigned int);  // also nvmlDeviceGetUUID
using DeviceGetFieldValuesFn = Return (*)(Device, int, FieldValue*);
using DeviceGetUintFn = Return (*)(Device, unsigned int*);       // power usage, limits
using DeviceGetUllFn = Return (*)(Device, unsigned long long*);  // NOLINT: energy, reasons
using DeviceGetLimitConstraintsFn = Return (*)(Device, unsigned int*, unsigned int*);
using DeviceGetUtilizationFn = Return (*)(Device, Utilization*);
using DeviceGetClockInfoFn = Return (*)(Device, int, unsigned int*);
using DeviceGetTemperatureFn = Return (*)(Device, int, unsigned int*);
using DeviceSetPowerLimitFn = Return (*)(Device, unsigned int);
using DeviceGetEnableStateFn = Return (*)(Device, int*);  // nvmlEnableState_t*: persistence mode
}

}  // namespace fw::nvml

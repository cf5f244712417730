#pragma once
// Our own minimal declarations of the NVML C API: only the types, constants and function
// signatures flexwatt uses. No NVIDIA SDK header is needed; the library is loaded at run time
// (nvml/nvml_library.hpp). Values are from the public NVML API reference
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
inline constexpr unsigned kSystemDriverVersionBufferSize =
    80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

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

// ---- Power smoothing (Blackwell and newer; NVML API Reference, "Power Smoothing Information",
// and nvml.h as shipped with CUDA 12.8, 12.9, 13.0 and 13.1; NVIDIA's copies in
// github.com/NVIDIA/go-nvml gen/nvml/nvml.h). Every set call requires root.

// nvmlPowerSmoothingProfile_v1_t: {version, profileId, paramId, value} (24 bytes on LP64).
struct PowerSmoothingProfile {
  unsigned int version;
  unsigned int profile_id;
  unsigned int param_id;
  double value;  // the unit of param_id (below)
};
static_assert(sizeof(PowerSmoothingProfile) == 24, "nvmlPowerSmoothingProfile_v1_t layout");
// nvmlPowerSmoothingState_v1_t: {version, state (nvmlEnableState_t)}.
struct PowerSmoothingState {
  unsigned int version;
  int state;  // kFeatureDisabled | kFeatureEnabled
};
static_assert(sizeof(PowerSmoothingState) == 8, "nvmlPowerSmoothingState_v1_t layout");
// NVML_STRUCT_VERSION(data, ver) = sizeof(struct) | ver << 24.
inline constexpr unsigned kPowerSmoothingProfileV1 = sizeof(PowerSmoothingProfile) | (1u << 24);
inline constexpr unsigned kPowerSmoothingStateV1 = sizeof(PowerSmoothingState) | (1u << 24);
// NVML_POWER_SMOOTHING_PROFILE_PARAM_*: the value units nvmlDevicePowerSmoothingUpdate-
// PresetProfileParam takes. Ids 4-7 (secondary floor, window multipliers, activation offset)
// exist from CUDA 13.1's header on; flexwatt does not use them.
inline constexpr unsigned kSmoothingParamPercentTmpFloor = 0;     // percent, 0.00-100.00
inline constexpr unsigned kSmoothingParamRampUpRate = 1;          // W/s
inline constexpr unsigned kSmoothingParamRampDownRate = 2;        // W/s
inline constexpr unsigned kSmoothingParamRampDownHysteresis = 3;  // ms
inline constexpr unsigned kSmoothingMaxProfiles = 5;  // NVML_POWER_SMOOTHING_MAX_NUM_PROFILES
// NVML_FI_PWR_SMOOTHING_* field ids: a block of 18 in this order, whose first id (ENABLED)
// depends on the header a driver was built from: 251 in CUDA 12.8's and 13.1's nvml.h, 256 in
// 12.9's and 13.0's (there 251-255 are clock-event-reason counters). Offsets within the block:
inline constexpr unsigned kSmoothingFieldBase251 = 251;
inline constexpr unsigned kSmoothingFieldBase256 = 256;
inline constexpr unsigned kSmoothingFieldEnabled = 0;              // 0/1
inline constexpr unsigned kSmoothingFieldPrivLevel = 1;            // current privilege level
inline constexpr unsigned kSmoothingFieldAppliedTmpCeil = 3;       // W
inline constexpr unsigned kSmoothingFieldAppliedTmpFloor = 4;      // W
inline constexpr unsigned kSmoothingFieldMaxPercentFloor = 5;      // percent
inline constexpr unsigned kSmoothingFieldMinPercentFloor = 6;      // percent
inline constexpr unsigned kSmoothingFieldMaxProfiles = 8;          // number of preset profiles
inline constexpr unsigned kSmoothingFieldProfilePercentFloor = 9;  // percent, of a profile
inline constexpr unsigned kSmoothingFieldProfileRampUp = 10;       // mW/s (not W/s), of a profile
inline constexpr unsigned kSmoothingFieldProfileRampDown = 11;     // mW/s, of a profile
inline constexpr unsigned kSmoothingFieldProfileHysteresis = 12;   // ms, of a profile
inline constexpr unsigned kSmoothingFieldActiveProfile = 13;       // active preset profile
inline constexpr unsigned kSmoothingFieldCount =
    18;  // ENABLED .. ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL

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
using SystemGetDriverVersionFn = Return (*)(char*, unsigned int);
// nvmlDevicePowerSmoothingActivatePresetProfile (reads profile_id only) and
// nvmlDevicePowerSmoothingUpdatePresetProfileParam.
using DevicePowerSmoothingProfileFn = Return (*)(Device, PowerSmoothingProfile*);
using DevicePowerSmoothingSetStateFn = Return (*)(Device, PowerSmoothingState*);
}

}  // namespace fw::nvml

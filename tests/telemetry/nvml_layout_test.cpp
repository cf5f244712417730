// nvml/nvml_api.hpp declares NVML's types itself (no SDK header is needed to build). This test
// checks those declarations against the layout and values NVIDIA documents in nvml.h (NVML API
// Reference: nvmlFieldValue_t, nvmlValue_t, nvmlUtilization_t, nvmlReturn_t, the NVML_FI_DEV_*
// field ids, buffer sizes). The reference structs below are written from that documentation, not
// from nvml_api.hpp, so a wrong member type or order in our declarations fails here instead of
// corrupting a driver's answer.

#include <gtest/gtest.h>

#include <cstddef>

#include "nvml/nvml_api.hpp"

namespace {

// As nvml.h documents them (C types; enums are int-sized).
typedef enum { NVML_VALUE_TYPE_DOUBLE_REF = 0 } nvmlValueType_ref;
typedef int nvmlReturn_ref;
typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;        // NOLINT(runtime/int)
  unsigned long long ullVal;  // NOLINT(runtime/int)
  signed long long sllVal;    // NOLINT(runtime/int)
  unsigned short usVal;       // NOLINT(runtime/int)
} nvmlValue_ref;
typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // NOLINT(runtime/int)
  long long latencyUsec;  // NOLINT(runtime/int)
  nvmlValueType_ref valueType;
  nvmlReturn_ref nvmlReturn;
  nvmlValue_ref value;
} nvmlFieldValue_ref;
typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_ref;

namespace nv = fw::nvml;

TEST(NvmlLayout, FieldValueMatchesNvidiasStruct) {
  EXPECT_EQ(sizeof(nv::FieldValue), sizeof(nvmlFieldValue_ref));
  EXPECT_EQ(alignof(nv::FieldValue), alignof(nvmlFieldValue_ref));
  EXPECT_EQ(offsetof(nv::FieldValue, field_id), offsetof(nvmlFieldValue_ref, fieldId));
  EXPECT_EQ(offsetof(nv::FieldValue, scope_id), offsetof(nvmlFieldValue_ref, scopeId));
  EXPECT_EQ(offsetof(nv::FieldValue, timestamp_us), offsetof(nvmlFieldValue_ref, timestamp));
  EXPECT_EQ(offsetof(nv::FieldValue, latency_us), offsetof(nvmlFieldValue_ref, latencyUsec));
  EXPECT_EQ(offsetof(nv::FieldValue, value_type), offsetof(nvmlFieldValue_ref, valueType));
  EXPECT_EQ(offsetof(nv::FieldValue, nvml_return), offsetof(nvmlFieldValue_ref, nvmlReturn));
  EXPECT_EQ(offsetof(nv::FieldValue, value), offsetof(nvmlFieldValue_ref, value));
  EXPECT_EQ(sizeof(nv::Value), sizeof(nvmlValue_ref));
  EXPECT_EQ(sizeof(nv::FieldValue::value_type), sizeof(nvmlValueType_ref));
  EXPECT_EQ(sizeof(nv::Return), sizeof(nvmlReturn_ref));
}

TEST(NvmlLayout, UtilizationMatchesNvidiasStruct) {
  EXPECT_EQ(sizeof(nv::Utilization), sizeof(nvmlUtilization_ref));
  EXPECT_EQ(offsetof(nv::Utilization, gpu), offsetof(nvmlUtilization_ref, gpu));
  EXPECT_EQ(offsetof(nv::Utilization, memory), offsetof(nvmlUtilization_ref, memory));
}

// Values from nvml.h as documented.
TEST(NvmlLayout, ConstantsMatchNvidiasHeader) {
  EXPECT_EQ(nv::kFieldPowerAverage, 185u);    // NVML_FI_DEV_POWER_AVERAGE
  EXPECT_EQ(nv::kFieldPowerInstant, 186u);    // NVML_FI_DEV_POWER_INSTANT
  EXPECT_EQ(nv::kPowerScopeGpu, 0u);          // NVML_POWER_SCOPE_GPU
  EXPECT_EQ(nv::kDeviceNameBufferSize, 96u);  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
  EXPECT_EQ(nv::kDeviceUuidBufferSize, 96u);  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
  EXPECT_EQ(nv::kClockSm, 1);                 // NVML_CLOCK_SM
  EXPECT_EQ(nv::kTemperatureGpu, 0);          // NVML_TEMPERATURE_GPU
  EXPECT_EQ(nv::kFeatureEnabled, 1);          // NVML_FEATURE_ENABLED
  EXPECT_EQ(nv::kValueUnsignedInt, 1);        // NVML_VALUE_TYPE_UNSIGNED_INT
  EXPECT_EQ(nv::kValueSignedLongLong, 4);     // NVML_VALUE_TYPE_SIGNED_LONG_LONG
  EXPECT_EQ(nv::kErrorNotSupported, 3);       // NVML_ERROR_NOT_SUPPORTED
  EXPECT_EQ(nv::kErrorNoPermission, 4);       // NVML_ERROR_NO_PERMISSION
  EXPECT_EQ(nv::kErrorDriverNotLoaded, 9);    // NVML_ERROR_DRIVER_NOT_LOADED
  EXPECT_EQ(nv::kErrorTimeout, 10);           // NVML_ERROR_TIMEOUT
  EXPECT_EQ(nv::kErrorFunctionNotFound, 13);  // NVML_ERROR_FUNCTION_NOT_FOUND
  EXPECT_EQ(nv::kErrorGpuIsLost, 15);         // NVML_ERROR_GPU_IS_LOST
  EXPECT_EQ(nv::kErrorUnknown, 999);          // NVML_ERROR_UNKNOWN
}

// Power smoothing, as NVIDIA's nvml.h (CUDA 12.8 to 13.1) and the NVML API Reference ("Power
// Smoothing Information") declare it.
typedef struct {
  unsigned int version;
  unsigned int profileId;
  unsigned int paramId;
  double value;
} nvmlPowerSmoothingProfile_v1_ref;
typedef struct {
  unsigned int version;
  nvmlValueType_ref state;  // nvmlEnableState_t: an int-sized enum
} nvmlPowerSmoothingState_v1_ref;

TEST(NvmlLayout, PowerSmoothingStructsMatchNvidias) {
  using P = nvmlPowerSmoothingProfile_v1_ref;
  EXPECT_EQ(sizeof(nv::PowerSmoothingProfile), sizeof(P));
  EXPECT_EQ(offsetof(nv::PowerSmoothingProfile, version), offsetof(P, version));
  EXPECT_EQ(offsetof(nv::PowerSmoothingProfile, profile_id), offsetof(P, profileId));
  EXPECT_EQ(offsetof(nv::PowerSmoothingProfile, param_id), offsetof(P, paramId));
  EXPECT_EQ(offsetof(nv::PowerSmoothingProfile, value), offsetof(P, value));
  using S = nvmlPowerSmoothingState_v1_ref;
  EXPECT_EQ(sizeof(nv::PowerSmoothingState), sizeof(S));
  EXPECT_EQ(offsetof(nv::PowerSmoothingState, state), offsetof(S, state));
  // NVML_STRUCT_VERSION(data, ver): sizeof | ver << 24.
  EXPECT_EQ(nv::kPowerSmoothingProfileV1, sizeof(P) | (1u << 24));
  EXPECT_EQ(nv::kPowerSmoothingStateV1, sizeof(S) | (1u << 24));
}

TEST(NvmlLayout, PowerSmoothingConstantsMatchNvidiasHeader) {
  EXPECT_EQ(nv::kSmoothingParamPercentTmpFloor, 0u);     // ..._PROFILE_PARAM_PERCENT_TMP_FLOOR
  EXPECT_EQ(nv::kSmoothingParamRampUpRate, 1u);          // ..._PROFILE_PARAM_RAMP_UP_RATE
  EXPECT_EQ(nv::kSmoothingParamRampDownRate, 2u);        // ..._PROFILE_PARAM_RAMP_DOWN_RATE
  EXPECT_EQ(nv::kSmoothingParamRampDownHysteresis, 3u);  // ..._PROFILE_PARAM_RAMP_DOWN_HYSTERESIS
  EXPECT_EQ(nv::kSmoothingMaxProfiles, 5u);              // NVML_POWER_SMOOTHING_MAX_NUM_PROFILES
  EXPECT_EQ(nv::kSystemDriverVersionBufferSize, 80u);    // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
  // NVML_FI_PWR_SMOOTHING_* in CUDA 13.1's nvml.h (12.8's: the same; 12.9's and 13.0's: +5).
  const unsigned b = nv::kSmoothingFieldBase251;
  EXPECT_EQ(b + nv::kSmoothingFieldEnabled, 251u);              // ENABLED
  EXPECT_EQ(b + nv::kSmoothingFieldAppliedTmpCeil, 254u);       // APPLIED_TMP_CEIL
  EXPECT_EQ(b + nv::kSmoothingFieldMaxPercentFloor, 256u);      // MAX_PERCENT_TMP_FLOOR_SETTING
  EXPECT_EQ(b + nv::kSmoothingFieldMinPercentFloor, 257u);      // MIN_PERCENT_TMP_FLOOR_SETTING
  EXPECT_EQ(b + nv::kSmoothingFieldMaxProfiles, 259u);          // MAX_NUM_PRESET_PROFILES
  EXPECT_EQ(b + nv::kSmoothingFieldProfilePercentFloor, 260u);  // PROFILE_PERCENT_TMP_FLOOR
  EXPECT_EQ(b + nv::kSmoothingFieldProfileRampUp, 261u);        // PROFILE_RAMP_UP_RATE
  EXPECT_EQ(b + nv::kSmoothingFieldProfileRampDown, 262u);      // PROFILE_RAMP_DOWN_RATE
  EXPECT_EQ(b + nv::kSmoothingFieldProfileHysteresis, 263u);    // PROFILE_RAMP_DOWN_HYST_VAL
  EXPECT_EQ(b + nv::kSmoothingFieldActiveProfile, 264u);        // ACTIVE_PRESET_PROFILE
  EXPECT_EQ(b + nv::kSmoothingFieldCount - 1, 268u);            // ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL
  EXPECT_EQ(nv::kSmoothingFieldBase256 + nv::kSmoothingFieldActiveProfile, 269u);  // 13.0's
}

}  // namespace

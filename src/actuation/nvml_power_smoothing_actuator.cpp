#include "actuation/nvml_power_smoothing_actuator.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace fw {
namespace {

namespace nv = nvml;

// NVML_FI_PWR_SMOOTHING_<name>, by offset in the block (nvml.h order).
constexpr const char* kFieldNames[nv::kSmoothingFieldCount] = {
    "ENABLED",
    "PRIV_LVL",
    "IMM_RAMP_DOWN_ENABLED",
    "APPLIED_TMP_CEIL",
    "APPLIED_TMP_FLOOR",
    "MAX_PERCENT_TMP_FLOOR_SETTING",
    "MIN_PERCENT_TMP_FLOOR_SETTING",
    "HW_CIRCUITRY_PERCENT_LIFETIME_REMAINING",
    "MAX_NUM_PRESET_PROFILES",
    "PROFILE_PERCENT_TMP_FLOOR",
    "PROFILE_RAMP_UP_RATE",
    "PROFILE_RAMP_DOWN_RATE",
    "PROFILE_RAMP_DOWN_HYST_VAL",
    "ACTIVE_PRESET_PROFILE",
    "ADMIN_OVERRIDE_PERCENT_TMP_FLOOR",
    "ADMIN_OVERRIDE_RAMP_UP_RATE",
    "ADMIN_OVERRIDE_RAMP_DOWN_RATE",
    "ADMIN_OVERRIDE_RAMP_DOWN_HYST_VAL",
};

// A field value as a double, whatever type the driver chose; NaN for an unknown type.
double as_double(const nv::FieldValue& v) {
  switch (v.value_type) {
    case nv::kValueDouble:
      return v.value.d_val;
    case nv::kValueUnsignedInt:
      return v.value.ui_val;
    case nv::kValueUnsignedLong:
      return static_cast<double>(v.value.ul_val);
    case nv::kValueUnsignedLongLong:
      return static_cast<double>(v.value.ull_val);
    case nv::kValueSignedLongLong:
      return static_cast<double>(v.value.sll_val);
    case nv::kValueSignedInt:
      return v.value.si_val;
    case nv::kValueUnsignedShort:
      return v.value.us_val;
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

struct Field {
  unsigned offset;
  nv::Return rc = nv::kErrorUnknown;
  double value = std::numeric_limits<double>::quiet_NaN();
};

std::string field_call(unsigned base, unsigned offset) {
  return "nvmlDeviceGetFieldValues(NVML_FI_PWR_SMOOTHING_" + std::string(kFieldNames[offset]) +
         "=" + std::to_string(base + offset) + ")";
}

// One nvmlDeviceGetFieldValues call for `fields` at scope `scope`; per-field codes in each.
Status get_fields(const nv::NvmlLibrary& l, nv::Device h, int gpu, unsigned base, unsigned scope,
                  std::vector<Field>& fields) {
  std::vector<nv::FieldValue> v(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    v[i] = nv::FieldValue{};
    v[i].field_id = base + fields[i].offset;
    v[i].scope_id = scope;
  }
  FW_RETURN_IF_ERROR(
      l.check(l.fn().device_get_field_values(h, static_cast<int>(v.size()), v.data()),
              "nvmlDeviceGetFieldValues(NVML_FI_PWR_SMOOTHING_*)", gpu));
  for (size_t i = 0; i < fields.size(); ++i) {
    fields[i].rc = v[i].nvml_return;
    if (v[i].nvml_return == nv::kSuccess) fields[i].value = as_double(v[i]);
  }
  return Status::Ok();
}

bool in(double v, double lo, double hi) { return v >= lo && v <= hi; }

}  // namespace

unsigned power_smoothing_field_base(std::string_view driver_version) {
  unsigned branch = 0;
  size_t i = 0;
  for (; i < driver_version.size() && i < 4 && driver_version[i] >= '0' && driver_version[i] <= '9';
       ++i) {
    branch = branch * 10 + static_cast<unsigned>(driver_version[i] - '0');
  }
  if (i == 0 || (i < driver_version.size() && driver_version[i] != '.')) return 0;
  if (branch < 570) return 0;
  if (branch >= 575 && branch < 590) return nv::kSmoothingFieldBase256;
  return nv::kSmoothingFieldBase251;
}

Result<std::unique_ptr<NvmlPowerSmoothingActuator>> NvmlPowerSmoothingActuator::open(
    std::shared_ptr<const nvml::NvmlLibrary> lib, const std::vector<int>& gpus) {
  std::unique_ptr<NvmlPowerSmoothingActuator> a(new NvmlPowerSmoothingActuator(std::move(lib)));
  const nv::NvmlLibrary& l = *a->lib_;
  const nv::NvmlFunctions& f = l.fn();
  std::string missing;
  if (!f.device_power_smoothing_update_preset_profile_param)
    missing += " nvmlDevicePowerSmoothingUpdatePresetProfileParam";
  if (!f.device_power_smoothing_activate_preset_profile)
    missing += " nvmlDevicePowerSmoothingActivatePresetProfile";
  if (!f.device_power_smoothing_set_state) missing += " nvmlDevicePowerSmoothingSetState";
  if (!f.device_get_field_values) missing += " nvmlDeviceGetFieldValues";
  if (!f.system_get_driver_version) missing += " nvmlSystemGetDriverVersion";
  if (!missing.empty()) {
    return Status::NotSupported(l.path() + ": no power smoothing in this driver (missing" +
                                missing + "; NVML has it from driver R570 on)");
  }
  char version[nv::kSystemDriverVersionBufferSize] = {};
  FW_RETURN_IF_ERROR(l.check(f.system_get_driver_version(version, sizeof version),
                             "nvmlSystemGetDriverVersion", -1));
  a->driver_version_ = version;
  a->field_base_ = power_smoothing_field_base(a->driver_version_);
  if (a->field_base_ == 0) {
    return Status::NotSupported("driver " + a->driver_version_ +
                                ": no power smoothing field layout known for it (R570 or newer)");
  }
  FW_ASSIGN_OR_RETURN(std::vector<int> selected, l.select_gpus(gpus));
  for (int g : selected) {
    if (a->managed(g)) continue;
    Device d;
    d.gpu = g;
    FW_RETURN_IF_ERROR(
        l.check(f.device_get_handle_by_index(static_cast<unsigned int>(g), &d.handle),
                "nvmlDeviceGetHandleByIndex", g));
    if (f.device_get_name) {
      char name[nv::kDeviceNameBufferSize] = {};
      if (f.device_get_name(d.handle, name, sizeof name) == nv::kSuccess) d.model = name;
    }
    d.support = a->read_limits(d);
    a->ids_.push_back(g);
    a->devs_.push_back(d);
  }
  return a;
}

std::string NvmlPowerSmoothingActuator::who(const Device& d) const {
  return "GPU " + std::to_string(d.gpu) + " (" + (d.model.empty() ? "model unknown" : d.model) +
         ")";
}

const NvmlPowerSmoothingActuator::Device& NvmlPowerSmoothingActuator::dev(int gpu) const {
  for (const Device& d : devs_) {
    if (d.gpu == gpu) return d;
  }
  std::abort();  // REQUIRES violated: not a managed GPU
}

Status NvmlPowerSmoothingActuator::read_limits(Device& d) const {
  const nv::NvmlLibrary& l = *lib_;
  const unsigned base = field_base_;
  std::vector<Field> fs = {
      {nv::kSmoothingFieldEnabled},         {nv::kSmoothingFieldActiveProfile},
      {nv::kSmoothingFieldMaxProfiles},     {nv::kSmoothingFieldMinPercentFloor},
      {nv::kSmoothingFieldMaxPercentFloor}, {nv::kSmoothingFieldAppliedTmpCeil}};
  FW_RETURN_IF_ERROR(get_fields(l, d.handle, d.gpu, base, 0, fs));
  if (fs[0].rc == nv::kErrorNotSupported) {
    return Status::NotSupported("power smoothing is not supported on " + who(d) + " [" +
                                field_call(base, nv::kSmoothingFieldEnabled) +
                                ": NVML_ERROR_NOT_SUPPORTED]; NVIDIA documents it for "
                                "Blackwell and newer");
  }
  for (size_t i : {0u, 1u}) {  // state and active profile: needed
    FW_RETURN_IF_ERROR(l.check(fs[i].rc, field_call(base, fs[i].offset), d.gpu));
  }
  // The others are optional: NVML's documented bounds where the device does not say.
  const double profiles = fs[2].rc == nv::kSuccess ? fs[2].value : nv::kSmoothingMaxProfiles;
  const double min_pct = fs[3].rc == nv::kSuccess ? fs[3].value : 0.0;
  const double max_pct = fs[4].rc == nv::kSuccess ? fs[4].value : 100.0;
  const bool plausible =
      (fs[0].value == 0 || fs[0].value == 1) && in(profiles, 1, nv::kSmoothingMaxProfiles) &&
      profiles == std::floor(profiles) && in(fs[1].value, 0, profiles - 1) && in(min_pct, 0, 100) &&
      in(max_pct, min_pct, 100) && (fs[5].rc != nv::kSuccess || fs[5].value > 0);
  if (!plausible) {
    return Status::NotSupported(
        who(d) +
        ": the NVML_FI_PWR_SMOOTHING_* values do not fit the field layout expected for "
        "driver " +
        driver_version_ + " (ids from " + std::to_string(base) +
        "): refusing to write settings that could not be read back");
  }
  d.limits.profiles = static_cast<int>(profiles);
  d.limits.floor_frac_min = min_pct / 100.0;
  d.limits.floor_frac_max = max_pct / 100.0;
  d.limits.tdp_w = fs[5].rc == nv::kSuccess ? fs[5].value : kUnset;
  d.support = Status::Ok();
  Result<PowerSmoothingReading> r = read_device(d);  // the profile fields answer too
  return r.ok() ? Status::Ok() : r.status();
}

Result<PowerSmoothingReading> NvmlPowerSmoothingActuator::read(int gpu) {
  if (!managed(gpu)) {
    return Status::InvalidArgument("read power smoothing: GPU " + std::to_string(gpu) +
                                   " not managed");
  }
  const Device& d = dev(gpu);
  FW_RETURN_IF_ERROR(d.support);
  return read_device(d);
}

Result<PowerSmoothingReading> NvmlPowerSmoothingActuator::read_device(const Device& d) const {
  const int gpu = d.gpu;
  const nv::NvmlLibrary& l = *lib_;
  const unsigned base = field_base_;
  std::vector<Field> state = {{nv::kSmoothingFieldEnabled}, {nv::kSmoothingFieldActiveProfile}};
  FW_RETURN_IF_ERROR(get_fields(l, d.handle, gpu, base, 0, state));
  for (const Field& f : state) FW_RETURN_IF_ERROR(l.check(f.rc, field_call(base, f.offset), gpu));
  const double enabled = state[0].value, active = state[1].value;
  const std::string layout =
      " (driver " + driver_version_ + ", field ids from " + std::to_string(base) + ")";
  if ((enabled != 0 && enabled != 1) || !in(active, 0, d.limits.profiles - 1) ||
      active != std::floor(active)) {
    return Status::Internal(who(d) + ": implausible power smoothing state (enabled " +
                            std::to_string(enabled) + ", active profile " + std::to_string(active) +
                            ")" + layout);
  }
  std::vector<Field> prof = {{nv::kSmoothingFieldProfilePercentFloor},
                             {nv::kSmoothingFieldProfileRampUp},
                             {nv::kSmoothingFieldProfileRampDown},
                             {nv::kSmoothingFieldProfileHysteresis}};
  FW_RETURN_IF_ERROR(get_fields(l, d.handle, gpu, base, static_cast<unsigned>(active), prof));
  for (const Field& f : prof) FW_RETURN_IF_ERROR(l.check(f.rc, field_call(base, f.offset), gpu));
  if (!in(prof[0].value, 0, 100) || !(prof[1].value >= 0) || !(prof[2].value >= 0) ||
      !(prof[3].value >= 0)) {
    return Status::Internal(who(d) + ": implausible power smoothing profile " +
                            std::to_string(static_cast<int>(active)) + layout);
  }
  PowerSmoothingReading r;
  r.limits = d.limits;
  r.settings.enabled = enabled == 1;
  r.settings.profile = static_cast<int>(active);
  r.settings.floor_frac_of_tdp = prof[0].value / 100.0;
  r.settings.ramp_up_w_per_s = prof[1].value * nv::kSiPerMilli;  // the fields are in mW/s
  r.settings.ramp_down_w_per_s = prof[2].value * nv::kSiPerMilli;
  r.settings.ramp_down_hysteresis_ms = prof[3].value;
  return r;
}

Status NvmlPowerSmoothingActuator::write(int gpu, const PowerSmoothingSettings& s, bool activate) {
  const Device& d = dev(gpu);
  const nv::NvmlLibrary& l = *lib_;
  const nv::NvmlFunctions& f = l.fn();
  // NVML's refusal, with what it means here.
  auto refused = [&](nv::Return rc, const std::string& call) {
    Status st = l.check(rc, call, gpu);
    if (st.code() == StatusCode::kPermissionDenied) {
      return Status(st.code(), st.message() + ": power smoothing settings need root");
    }
    if (st.code() == StatusCode::kNotSupported) return st.with_context(who(d));
    return st;
  };
  struct Param {
    unsigned id;
    const char* name;
    double value;  // NVML's unit
  };
  const Param params[] = {
      {nv::kSmoothingParamPercentTmpFloor, "PERCENT_TMP_FLOOR", s.floor_frac_of_tdp * 100.0},
      {nv::kSmoothingParamRampUpRate, "RAMP_UP_RATE", s.ramp_up_w_per_s},
      {nv::kSmoothingParamRampDownRate, "RAMP_DOWN_RATE", s.ramp_down_w_per_s},
      {nv::kSmoothingParamRampDownHysteresis, "RAMP_DOWN_HYSTERESIS", s.ramp_down_hysteresis_ms},
  };
  const auto profile = static_cast<unsigned>(s.profile);
  for (const Param& p : params) {
    nv::PowerSmoothingProfile arg{nv::kPowerSmoothingProfileV1, profile, p.id, p.value};
    const nv::Return rc = f.device_power_smoothing_update_preset_profile_param(d.handle, &arg);
    if (rc != nv::kSuccess) {
      return refused(rc, "nvmlDevicePowerSmoothingUpdatePresetProfileParam(profile " +
                             std::to_string(profile) + ", " + p.name + ")");
    }
  }
  if (activate) {
    nv::PowerSmoothingProfile arg{nv::kPowerSmoothingProfileV1, profile, 0, 0.0};
    const nv::Return rc = f.device_power_smoothing_activate_preset_profile(d.handle, &arg);
    if (rc != nv::kSuccess) {
      return refused(rc, "nvmlDevicePowerSmoothingActivatePresetProfile(profile " +
                             std::to_string(profile) + ")");
    }
  }
  nv::PowerSmoothingState st{nv::kPowerSmoothingStateV1,
                             s.enabled ? nv::kFeatureEnabled : nv::kFeatureDisabled};
  const nv::Return rc = f.device_power_smoothing_set_state(d.handle, &st);
  if (rc != nv::kSuccess) return refused(rc, "nvmlDevicePowerSmoothingSetState");
  return Status::Ok();
}

}  // namespace fw

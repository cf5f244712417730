#include "telemetry/nvml_source.hpp"

#include <algorithm>
#include <cmath>

#include "hw/gpu_catalog.hpp"

namespace fw {
namespace {

constexpr const char* kInstantCall = "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_INSTANT)";
constexpr const char* kAverageCall = "nvmlDeviceGetFieldValues(NVML_FI_DEV_POWER_AVERAGE)";

// A field value as a double, whatever C type the driver chose.
double field_as_double(const nvml::FieldValue& v) {
  switch (v.value_type) {
    case nvml::kValueDouble:
      return v.value.d_val;
    case nvml::kValueUnsignedInt:
      return v.value.ui_val;
    case nvml::kValueUnsignedLong:
      return static_cast<double>(v.value.ul_val);
    case nvml::kValueUnsignedLongLong:
      return static_cast<double>(v.value.ull_val);
    case nvml::kValueSignedLongLong:
      return static_cast<double>(v.value.sll_val);
    case nvml::kValueSignedInt:
      return v.value.si_val;
    case nvml::kValueUnsignedShort:
      return v.value.us_val;
    default:
      return kUnset;
  }
}

// Reads one GPU-scope power field (mW); the call's or the field's failure, whichever came.
nvml::Return read_power_field(const nvml::NvmlFunctions& f, nvml::Device h, unsigned field_id,
                              double& mw) {
  nvml::FieldValue fv{};
  fv.field_id = field_id;
  fv.scope_id = nvml::kPowerScopeGpu;
  const nvml::Return rc = f.device_get_field_values(h, 1, &fv);
  if (rc != nvml::kSuccess) return rc;
  if (fv.nvml_return != nvml::kSuccess) return fv.nvml_return;
  mw = field_as_double(fv);
  return std::isfinite(mw) ? nvml::kSuccess : nvml::kErrorNotSupported;
}

}  // namespace

Result<std::unique_ptr<NvmlGpuSource>> NvmlGpuSource::open(
    std::shared_ptr<const nvml::NvmlLibrary> lib, const std::vector<int>& gpus) {
  std::unique_ptr<NvmlGpuSource> src(new NvmlGpuSource(std::move(lib)));
  const nvml::NvmlFunctions& f = src->lib_->fn();
  unsigned int count = 0;
  FW_RETURN_IF_ERROR(src->lib_->check(f.device_get_count(&count), "nvmlDeviceGetCount", -1));
  src->devs_.resize(count);
  FW_ASSIGN_OR_RETURN(std::vector<int> selected, src->lib_->select_gpus(gpus));
  size_t opened = 0;
  for (int g : selected) {
    if (src->devs_[g].probed || src->lost(g)) continue;
    Status st = src->probe(g, src->devs_[g]);
    if (st.code() == StatusCode::kUnavailable) {  // fell off the bus: the others go on
      src->lost_.push_back({g, st.message()});
      src->devs_[g] = Device{};
      continue;
    }
    FW_RETURN_IF_ERROR(st);
    src->devs_[g].probed = true;
    ++opened;
  }
  if (opened == 0 && !src->lost_.empty()) {
    return Status::Unavailable("every selected GPU is unreachable; first: " +
                               src->lost_.front().reason);
  }
  return src;
}

bool NvmlGpuSource::optional_ok(nvml::Return rc, bool fn_present, const char* call, int gpu,
                                Device& d, Status& st) const {
  if (!fn_present || rc == nvml::kErrorNotSupported || rc == nvml::kErrorFunctionNotFound) {
    d.info.unsupported.emplace_back(call);
    return false;
  }
  st = lib_->check(rc, call, gpu);
  return st.ok();
}

// Long by design: one probe per NVML reading, each with its own fallback; splitting would scatter
// the table of readings.
Status NvmlGpuSource::probe(int gpu, Device& d) {
  const nvml::NvmlFunctions& f = lib_->fn();
  FW_RETURN_IF_ERROR(
      lib_->check(f.device_get_handle_by_index(static_cast<unsigned int>(gpu), &d.handle),
                  "nvmlDeviceGetHandleByIndex", gpu));

  if (f.device_get_name) {
    char name[nvml::kDeviceNameBufferSize] = {};
    FW_RETURN_IF_ERROR(
        lib_->check(f.device_get_name(d.handle, name, sizeof(name)), "nvmlDeviceGetName", gpu));
    name[sizeof(name) - 1] = '\0';
    d.info.name = name;
  }
  // Identity only: a library or device without a UUID leaves it empty (callers fall back).
  if (f.device_get_uuid) {
    char uuid[nvml::kDeviceUuidBufferSize] = {};
    if (f.device_get_uuid(d.handle, uuid, sizeof(uuid)) == nvml::kSuccess) {
      uuid[sizeof(uuid) - 1] = '\0';
      d.info.uuid = uuid;
    }
  }

  // Power (see PowerSource): the averaged field, else the power usage call, else the instant
  // field; the instant field also as power_instant_w where the device answers it.
  double mw_probe = 0;
  auto probe_field = [&](unsigned id, const char* call, bool& ok) -> Status {
    ok = false;
    if (!f.device_get_field_values) return Status::Ok();
    const nvml::Return rc = read_power_field(f, d.handle, id, mw_probe);
    if (rc == nvml::kErrorGpuIsLost) return lib_->check(rc, call, gpu);
    ok = rc == nvml::kSuccess;
    return Status::Ok();
  };
  bool has_average = false;
  FW_RETURN_IF_ERROR(probe_field(nvml::kFieldPowerAverage, kAverageCall, has_average));
  FW_RETURN_IF_ERROR(probe_field(nvml::kFieldPowerInstant, kInstantCall, d.info.has_instant));
  const hw::GpuCatalogEntry* spec = hw::find_gpu_by_device_name(d.info.name);
  if (has_average) {
    d.info.power_source = PowerSource::kAverageField;
    d.info.power_averaging = PowerAveraging::kAvg1s;
  } else if (f.device_get_power_usage) {
    unsigned int mw = 0;
    const nvml::Return rc = f.device_get_power_usage(d.handle, &mw);
    if (rc == nvml::kSuccess || !d.info.has_instant) {
      FW_RETURN_IF_ERROR(lib_->check(rc, "nvmlDeviceGetPowerUsage", gpu));
      d.info.power_source = PowerSource::kPowerUsage;
      // NVML: a 1 s average on Ampere other than GA100 and newer, instantaneous on GA100 and
      // older; the catalog knows which a named model is.
      if (spec) {
        d.info.power_averaging =
            spec->power_avg_1s ? PowerAveraging::kAvg1s : PowerAveraging::kInstant;
      }
    } else {
      d.info.power_source = PowerSource::kInstantField;
      d.info.power_averaging = PowerAveraging::kInstant;
    }
  } else if (d.info.has_instant) {
    d.info.power_source = PowerSource::kInstantField;
    d.info.power_averaging = PowerAveraging::kInstant;
  } else {
    return lib_->check(nvml::kErrorFunctionNotFound, "nvmlDeviceGetPowerUsage", gpu);
  }

  // Energy: a counter that is present and does not go backwards across two reads.
  d.info.energy_source = EnergySource::kIntegrated;
  if (f.device_get_total_energy_consumption) {
    unsigned long long e0 = 0, e1 = 0;  // NOLINT(runtime/int)
    const nvml::Return rc0 = f.device_get_total_energy_consumption(d.handle, &e0);
    if (rc0 == nvml::kSuccess) {
      const nvml::Return rc1 = f.device_get_total_energy_consumption(d.handle, &e1);
      if (rc1 == nvml::kSuccess && e1 >= e0) {
        d.info.energy_source = EnergySource::kCounter;
        d.last_counter_mj = e1;
      } else if (rc1 != nvml::kSuccess && rc1 != nvml::kErrorNotSupported) {
        return lib_->check(rc1, "nvmlDeviceGetTotalEnergyConsumption", gpu);
      }
    } else if (rc0 != nvml::kErrorNotSupported) {
      return lib_->check(rc0, "nvmlDeviceGetTotalEnergyConsumption", gpu);
    }
  }

  // Limits.
  Status st;
  unsigned int mw = 0;
  d.has_limit = optional_ok(
      f.device_get_enforced_power_limit ? f.device_get_enforced_power_limit(d.handle, &mw) : 0,
      f.device_get_enforced_power_limit != nullptr, "nvmlDeviceGetEnforcedPowerLimit", gpu, d, st);
  FW_RETURN_IF_ERROR(st);
  unsigned int min_mw = 0, max_mw = 0;
  if (optional_ok(f.device_get_power_limit_constraints
                      ? f.device_get_power_limit_constraints(d.handle, &min_mw, &max_mw)
                      : 0,
                  f.device_get_power_limit_constraints != nullptr,
                  "nvmlDeviceGetPowerManagementLimitConstraints", gpu, d, st)) {
    d.info.min_limit_w = min_mw * nvml::kSiPerMilli;
    d.info.max_limit_w = max_mw * nvml::kSiPerMilli;
  }
  FW_RETURN_IF_ERROR(st);
  if (optional_ok(
          f.device_get_power_default_limit ? f.device_get_power_default_limit(d.handle, &mw) : 0,
          f.device_get_power_default_limit != nullptr, "nvmlDeviceGetPowerManagementDefaultLimit",
          gpu, d, st)) {
    d.info.default_limit_w = mw * nvml::kSiPerMilli;
  }
  FW_RETURN_IF_ERROR(st);

  // Other readings.
  nvml::Utilization util{};
  d.has_util = optional_ok(
      f.device_get_utilization_rates ? f.device_get_utilization_rates(d.handle, &util) : 0,
      f.device_get_utilization_rates != nullptr, "nvmlDeviceGetUtilizationRates", gpu, d, st);
  FW_RETURN_IF_ERROR(st);
  d.has_clock = optional_ok(
      f.device_get_clock_info ? f.device_get_clock_info(d.handle, nvml::kClockSm, &mw) : 0,
      f.device_get_clock_info != nullptr, "nvmlDeviceGetClockInfo", gpu, d, st);
  FW_RETURN_IF_ERROR(st);
  d.has_temp = optional_ok(
      f.device_get_temperature ? f.device_get_temperature(d.handle, nvml::kTemperatureGpu, &mw) : 0,
      f.device_get_temperature != nullptr, "nvmlDeviceGetTemperature", gpu, d, st);
  FW_RETURN_IF_ERROR(st);
  unsigned long long reasons = 0;  // NOLINT(runtime/int)
  d.has_reasons = optional_ok(
      f.device_get_clock_event_reasons ? f.device_get_clock_event_reasons(d.handle, &reasons) : 0,
      f.device_get_clock_event_reasons != nullptr,
      lib_->clock_reasons_symbol().empty() ? "nvmlDeviceGetCurrentClocksEventReasons"
                                           : lib_->clock_reasons_symbol().c_str(),
      gpu, d, st);
  return st;
}

Status NvmlGpuSource::read_power_w(int gpu, const Device& d, PowerSource source,
                                   double& power_w) const {
  const nvml::NvmlFunctions& f = lib_->fn();
  if (source == PowerSource::kPowerUsage) {
    unsigned int mw = 0;
    FW_RETURN_IF_ERROR(
        lib_->check(f.device_get_power_usage(d.handle, &mw), "nvmlDeviceGetPowerUsage", gpu));
    power_w = mw * nvml::kSiPerMilli;
    return Status::Ok();
  }
  const bool average = source == PowerSource::kAverageField;
  double mw = 0;
  FW_RETURN_IF_ERROR(lib_->check(
      read_power_field(f, d.handle, average ? nvml::kFieldPowerAverage : nvml::kFieldPowerInstant,
                       mw),
      average ? kAverageCall : kInstantCall, gpu));
  power_w = mw * nvml::kSiPerMilli;
  return Status::Ok();
}

Status NvmlGpuSource::read(int gpu, double now_s, GpuSample& out) {
  if (!probed(gpu)) {
    return Status::InvalidArgument("read: GPU " + std::to_string(gpu) +
                                   " was not opened (NVML reports " +
                                   std::to_string(device_count()) + " GPUs)");
  }
  Device& d = devs_[gpu];
  const nvml::NvmlFunctions& f = lib_->fn();
  out = GpuSample{};
  GpuReading& r = out.reading;
  r.gpu = gpu;

  FW_RETURN_IF_ERROR(read_power_w(gpu, d, d.info.power_source, r.power_w));
  if (d.info.power_source == PowerSource::kInstantField) {
    r.power_instant_w = r.power_w;
  } else if (d.info.has_instant) {
    FW_RETURN_IF_ERROR(read_power_w(gpu, d, PowerSource::kInstantField, r.power_instant_w));
  }

  if (d.info.energy_source == EnergySource::kCounter) {
    unsigned long long mj = 0;  // NOLINT(runtime/int)
    FW_RETURN_IF_ERROR(lib_->check(f.device_get_total_energy_consumption(d.handle, &mj),
                                   "nvmlDeviceGetTotalEnergyConsumption", gpu));
    if (mj < d.last_counter_mj)
      d.counter_offset_j += d.last_counter_mj * nvml::kSiPerMilli;  // restarted
    d.last_counter_mj = mj;
    r.energy_j = d.counter_offset_j + mj * nvml::kSiPerMilli;
  } else {
    if (d.has_prev && now_s > d.prev_time_s) {
      d.integrated_j += 0.5 * (d.prev_power_w + r.power_w) * (now_s - d.prev_time_s);
    }
    d.has_prev = true;
    d.prev_time_s = std::max(d.prev_time_s, now_s);
    d.prev_power_w = r.power_w;
    r.energy_j = d.integrated_j;
  }

  unsigned int v = 0;
  if (d.has_limit) {
    FW_RETURN_IF_ERROR(lib_->check(f.device_get_enforced_power_limit(d.handle, &v),
                                   "nvmlDeviceGetEnforcedPowerLimit", gpu));
    r.cap_w = v * nvml::kSiPerMilli;
  }
  // Optional readings: an error leaves the reading unset and is named in out.skipped; a lost
  // GPU still fails the read (every later call on it fails too).
  Status lost;
  auto got = [&](nvml::Return rc, const std::string& call) {
    if (rc == nvml::kSuccess) return true;
    const Status st = lib_->check(rc, call, gpu);
    if (rc == nvml::kErrorGpuIsLost) {
      if (lost.ok()) lost = st;
    } else {
      out.skipped.push_back(st.message());
    }
    return false;
  };
  if (d.has_util) {
    nvml::Utilization u{};
    if (got(f.device_get_utilization_rates(d.handle, &u), "nvmlDeviceGetUtilizationRates")) {
      r.sm_util = u.gpu / 100.0;
      r.mem_util = u.memory / 100.0;
    }
  }
  if (d.has_clock &&
      got(f.device_get_clock_info(d.handle, nvml::kClockSm, &v), "nvmlDeviceGetClockInfo")) {
    r.sm_clock_mhz = v;
  }
  if (d.has_temp && got(f.device_get_temperature(d.handle, nvml::kTemperatureGpu, &v),
                        "nvmlDeviceGetTemperature")) {
    r.temp_c = v;
  }
  if (d.has_reasons) {
    unsigned long long reasons = 0;  // NOLINT(runtime/int)
    if (got(f.device_get_clock_event_reasons(d.handle, &reasons), lib_->clock_reasons_symbol())) {
      out.clock_event_reasons = reasons;
      out.has_clock_event_reasons = true;
    }
  }
  return lost;
}

}  // namespace fw

#include "actuation/power_smoothing_actuator.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/format.hpp"

namespace fw {
namespace {

std::string num(double v) { return format_g(v, 6); }

// InvalidArgument unless v is finite and >= 0.
Status check_non_negative(const std::string& what, const char* field, double v, const char* unit) {
  if (std::isfinite(v) && v >= 0) return Status::Ok();
  return Status::InvalidArgument(what + ": " + field + " = " + num(v) + " is outside [0, inf) " +
                                 unit + (std::isnan(v) ? " (not given)" : ""));
}

}  // namespace

bool PowerSmoothingActuator::managed(int gpu) const {
  const std::vector<int>& g = gpus();
  return std::find(g.begin(), g.end(), gpu) != g.end();
}

Result<PowerSmoothingSettings> PowerSmoothingActuator::validate(
    int gpu, const PowerSmoothingRequest& r) const {
  const std::string what = "set power smoothing (GPU " + std::to_string(gpu) + ")";
  if (!managed(gpu)) {
    return Status::InvalidArgument(what + ": GPU not managed by this actuator");
  }
  FW_RETURN_IF_ERROR(support(gpu));
  const PowerSmoothingLimits lim = limits(gpu);
  const bool has_frac = !std::isnan(r.floor_frac_of_tdp), has_w = !std::isnan(r.floor_w);
  if (has_frac == has_w) {
    return Status::InvalidArgument(what + ": give exactly one of floor_frac_of_tdp and floor_w");
  }
  double frac = r.floor_frac_of_tdp;
  const std::string range_frac = "[" + num(lim.floor_frac_min) + ", " + num(lim.floor_frac_max) +
                                 "] (NVML takes 0-100 % of the TMP ceiling; this device allows " +
                                 num(100 * lim.floor_frac_min) + "-" +
                                 num(100 * lim.floor_frac_max) + " %)";
  if (has_w) {
    if (!(std::isfinite(lim.tdp_w) && lim.tdp_w > 0)) {
      return Status::InvalidArgument(
          what +
          ": floor_w needs the TMP ceiling, which this device does not report "
          "(NVML_FI_PWR_SMOOTHING_APPLIED_TMP_CEIL): give floor_frac_of_tdp");
    }
    if (!std::isfinite(r.floor_w) || r.floor_w < lim.floor_frac_min * lim.tdp_w ||
        r.floor_w > lim.floor_frac_max * lim.tdp_w) {
      return Status::InvalidArgument(
          what + ": floor_w = " + num(r.floor_w) + " W is outside [" +
          num(lim.floor_frac_min * lim.tdp_w) + ", " + num(lim.floor_frac_max * lim.tdp_w) +
          "] W (" + num(100 * lim.floor_frac_min) + "-" + num(100 * lim.floor_frac_max) +
          " % of the " + num(lim.tdp_w) + " W TMP ceiling)");
    }
    frac = r.floor_w / lim.tdp_w;
  } else if (!std::isfinite(frac) || frac < lim.floor_frac_min || frac > lim.floor_frac_max) {
    return Status::InvalidArgument(what + ": floor_frac_of_tdp = " + num(frac) + " is outside " +
                                   range_frac);
  }
  FW_RETURN_IF_ERROR(check_non_negative(what, "ramp_up_w_per_s", r.ramp_up_w_per_s, "W/s"));
  FW_RETURN_IF_ERROR(check_non_negative(what, "ramp_down_w_per_s", r.ramp_down_w_per_s, "W/s"));
  FW_RETURN_IF_ERROR(
      check_non_negative(what, "ramp_down_hysteresis_ms", r.ramp_down_hysteresis_ms, "ms"));
  PowerSmoothingSettings s;
  s.enabled = r.enabled;
  s.floor_frac_of_tdp = frac;
  s.ramp_up_w_per_s = r.ramp_up_w_per_s;
  s.ramp_down_w_per_s = r.ramp_down_w_per_s;
  s.ramp_down_hysteresis_ms = r.ramp_down_hysteresis_ms;
  return s;
}

Result<PowerSmoothingReading> PowerSmoothingActuator::set(int gpu,
                                                          const PowerSmoothingRequest& request) {
  FW_ASSIGN_OR_RETURN(PowerSmoothingSettings s, validate(gpu, request));
  const std::string what = "set power smoothing (GPU " + std::to_string(gpu) + ")";
  Result<PowerSmoothingReading> now = read(gpu);
  if (!now.ok()) return now.status().with_context(what);
  if (!has_saved(gpu)) saved_[gpu] = now->settings;  // save before the first write
  changed_.insert(gpu);
  s.profile = now->settings.profile;  // the active profile stays active
  FW_RETURN_IF_ERROR(write(gpu, s, false).with_context(what));
  return read(gpu);
}

Status PowerSmoothingActuator::save() {
  std::map<int, PowerSmoothingSettings> found;
  for (int g : gpus()) {
    if (!support(g).ok()) continue;
    Result<PowerSmoothingReading> r = read(g);
    if (!r.ok()) return r.status().with_context("save power smoothing");
    found[g] = r->settings;
  }
  saved_ = std::move(found);
  changed_.clear();
  return Status::Ok();
}

Status PowerSmoothingActuator::save_with(const std::vector<SavedSmoothing>& kept) {
  // Every entry is checked before anything is recorded.
  std::set<int> seen;
  for (const SavedSmoothing& k : kept) {
    const std::string what = "save power smoothing (GPU " + std::to_string(k.gpu) + ")";
    if (!managed(k.gpu)) return Status::InvalidArgument(what + ": GPU not managed");
    if (!seen.insert(k.gpu).second) return Status::InvalidArgument(what + ": given twice");
    FW_RETURN_IF_ERROR(support(k.gpu).with_context(what));
    const PowerSmoothingSettings& s = k.settings;
    const bool ok = s.profile >= 0 && s.profile < limits(k.gpu).profiles &&
                    s.floor_frac_of_tdp >= 0 && s.floor_frac_of_tdp <= 1 &&
                    std::isfinite(s.ramp_up_w_per_s) && s.ramp_up_w_per_s >= 0 &&
                    std::isfinite(s.ramp_down_w_per_s) && s.ramp_down_w_per_s >= 0 &&
                    std::isfinite(s.ramp_down_hysteresis_ms) && s.ramp_down_hysteresis_ms >= 0;
    if (!ok) {
      return Status::InvalidArgument(
          what + ": settings no device holds (profile " + std::to_string(s.profile) + ", floor " +
          num(s.floor_frac_of_tdp) + " of the TMP ceiling, rates " + num(s.ramp_up_w_per_s) + "/" +
          num(s.ramp_down_w_per_s) + " W/s, hysteresis " + num(s.ramp_down_hysteresis_ms) + " ms)");
    }
  }
  FW_RETURN_IF_ERROR(save());
  for (const SavedSmoothing& k : kept) {
    saved_[k.gpu] = k.settings;
    changed_.insert(k.gpu);
  }
  return Status::Ok();
}

Status PowerSmoothingActuator::restore() {
  if (saved_.empty()) {
    return Status::InvalidArgument("restore power smoothing: nothing saved (no write, no save())");
  }
  std::vector<int> all;
  for (const auto& [g, s] : saved_) all.push_back(g);
  return restore(all);
}

Status PowerSmoothingActuator::restore(const std::vector<int>& gpus) {
  for (int g : gpus) {
    if (!has_saved(g)) {
      return Status::InvalidArgument("restore power smoothing (GPU " + std::to_string(g) +
                                     "): nothing saved for it");
    }
  }
  Status first;
  for (int g : gpus) {
    Status st = support(g);
    if (st.ok()) st = write(g, saved_.at(g), true);
    if (st.ok()) changed_.erase(g);
    if (!st.ok() && first.ok()) {
      first = st.with_context("restore power smoothing (GPU " + std::to_string(g) + ")");
    }
  }
  return first;
}

}  // namespace fw

#include "analysis/stability_limits.hpp"

#include <cmath>

#include "core/format.hpp"

namespace fw {

bool StabilityLimits::any() const {
  return !std::isnan(max_ramp_w_per_s) || !std::isnan(max_ramp_frac_per_s) ||
         !std::isnan(max_band_frac);
}

Status validate(const StabilityLimits& l) {
  if (!std::isnan(l.max_ramp_w_per_s) &&
      !(l.max_ramp_w_per_s > 0 && std::isfinite(l.max_ramp_w_per_s))) {
    return Status::InvalidArgument("--max-ramp-w-per-s: must be a finite number > 0");
  }
  if (!std::isnan(l.max_ramp_frac_per_s) &&
      !(l.max_ramp_frac_per_s > 0 && std::isfinite(l.max_ramp_frac_per_s))) {
    return Status::InvalidArgument("--max-ramp-frac-per-s: must be a finite number > 0");
  }
  if (!std::isnan(l.max_band_frac) && !(l.max_band_frac >= 0 && l.max_band_frac <= 1)) {
    return Status::InvalidArgument("--max-band-frac: must be in [0, 1]");
  }
  if (!(l.window_s > 0) || !std::isfinite(l.window_s)) {
    return Status::InvalidArgument("--limit-window-s: must be a finite number > 0");
  }
  return Status::Ok();
}

Result<std::vector<LimitCheck>> check_limits(const StabilityReport& r, const StabilityLimits& l) {
  FW_RETURN_IF_ERROR(validate(l));
  std::vector<LimitCheck> out;
  const bool ramp_given = !std::isnan(l.max_ramp_w_per_s) || !std::isnan(l.max_ramp_frac_per_s);
  if (ramp_given) {
    const char* flag =
        !std::isnan(l.max_ramp_w_per_s) ? "--max-ramp-w-per-s" : "--max-ramp-frac-per-s";
    const RampStats* ramp = nullptr;
    for (const RampStats& x : r.ramps) {
      if (x.window_s == l.window_s) ramp = &x;
    }
    if (ramp == nullptr) {
      return Status::InvalidArgument(std::string(flag) + ": no ramp computed at the " +
                                     format_g(l.window_s) + " s window");
    }
    if (!ramp->skipped.empty()) {
      return Status::InvalidArgument(r.path + ": " + flag + ": cannot judge the ramp over " +
                                     format_g(l.window_s) +
                                     " s (--limit-window-s): " + ramp->skipped);
    }
    const double v = ramp->max_abs_w_per_s();
    if (!std::isnan(l.max_ramp_w_per_s)) {
      out.push_back(
          {"max_ramp_w_per_s", l.max_ramp_w_per_s, v, l.window_s, v > l.max_ramp_w_per_s});
    }
    if (!std::isnan(l.max_ramp_frac_per_s)) {
      const double f = r.peak_w > 0 ? v / r.peak_w : 0;
      out.push_back(
          {"max_ramp_frac_per_s", l.max_ramp_frac_per_s, f, l.window_s, f > l.max_ramp_frac_per_s});
    }
  }
  if (!std::isnan(l.max_band_frac)) {
    if (!r.band.visible) {
      return Status::InvalidArgument(r.path + ": --max-band-frac: cannot judge the band " +
                                     format_g(r.band.lo_hz) + "-" + format_g(r.band.hi_hz) +
                                     " Hz: it lies above the trace's Nyquist frequency (" +
                                     format_g(r.band.nyquist_hz) + " Hz)");
    }
    out.push_back({"max_band_frac", l.max_band_frac, r.band.fraction, kUnset,
                   r.band.fraction > l.max_band_frac});
  }
  return out;
}

}  // namespace fw

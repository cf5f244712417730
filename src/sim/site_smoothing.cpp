#include "sim/site_smoothing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fw::sim {
namespace {

// GB200: floor settable at 20-90 % of the TMP ceiling, as arXiv 2508.14318 states (quoted in
// issue #48; docs/stabilization.md). No other GPU model is listed: NVML documents power
// smoothing "for Blackwell or newer" without ranges, and no B200 range was found.
constexpr SmoothingCapability kCapabilities[] = {
    {"gb200", 0.20, 0.90},
};

}  // namespace

const SmoothingCapability* find_smoothing_capability(std::string_view model) {
  for (const auto& c : kCapabilities) {
    if (c.model == model) return &c;
  }
  return nullptr;
}

const char* smoothing_capability_names() { return "gb200"; }

Status validate(const SmoothingSettings& s, const SmoothingCapability& cap) {
  if (!s.enabled) return Status::Ok();
  if (!(s.floor_frac >= cap.floor_frac_min - 1e-12 && s.floor_frac <= cap.floor_frac_max + 1e-12)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "floor_frac: %g is outside %s's settable %g..%g", s.floor_frac,
                  std::string(cap.model).c_str(), cap.floor_frac_min, cap.floor_frac_max);
    return Status::InvalidArgument(buf);
  }
  if (!(s.ramp_up_w_per_s > 0)) return Status::InvalidArgument("ramp_up_w_per_s: must be > 0");
  if (!(s.ramp_down_w_per_s > 0)) return Status::InvalidArgument("ramp_down_w_per_s: must be > 0");
  if (!(s.ramp_down_hysteresis_ms >= 0) || !std::isfinite(s.ramp_down_hysteresis_ms)) {
    return Status::InvalidArgument("ramp_down_hysteresis_ms: must be finite and >= 0");
  }
  return Status::Ok();
}

std::string describe(const SmoothingSettings& s) {
  if (!s.enabled) return "off";
  char buf[128];
  std::snprintf(buf, sizeof buf, "floor %.0f%% up %g down %g W/s hyst %g ms", s.floor_frac * 100,
                s.ramp_up_w_per_s, s.ramp_down_w_per_s, s.ramp_down_hysteresis_ms);
  return buf;
}

double smoothing_ceiling_w(const SmoothingSettings& s, const SmoothingState& st, double dt_s) {
  if (!s.enabled || std::isnan(st.envelope_w)) return kNoRampLimit;
  return st.envelope_w + s.ramp_up_w_per_s * dt_s;
}

double smoothing_step(const SmoothingSettings& s, SmoothingState& st, double draw_w, double floor_w,
                      double dt_s) {
  if (!s.enabled) return draw_w;
  const double target = std::max(draw_w, floor_w);
  if (std::isnan(st.envelope_w)) st.envelope_w = draw_w;  // first step: nothing to smooth yet
  double& e = st.envelope_w;
  if (target >= e) {
    e = std::min(target, e + s.ramp_up_w_per_s * dt_s);
    st.below_s = 0;
  } else {
    st.below_s += dt_s;
    if (st.below_s * 1000.0 > s.ramp_down_hysteresis_ms + 1e-9) {
      e = std::max(target, e - s.ramp_down_w_per_s * dt_s);
    }
  }
  // The work drew more than the ramp allowed (the throttle is set per step from the load at
  // its start): the GPU drew it, and the envelope follows what was drawn.
  if (draw_w > e) e = draw_w;
  return e;
}

}  // namespace fw::sim

#pragma once
// GPU power smoothing as the site simulator models it (issue #48; docs/stabilization.md,
// "Power smoothing"). Blackwell and newer GPUs hold a power floor and limit how fast their power
// moves (NVML power smoothing: PERCENT_TMP_FLOOR, RAMP_UP_RATE and RAMP_DOWN_RATE in W/s,
// RAMP_DOWN_HYSTERESIS in ms; docs/telemetry.md "Power smoothing"). What the firmware does with
// those settings is not documented beyond their names and units; the model below is flexwatt's
// reading of them, unverified on hardware:
//
// - The smoothing keeps an envelope e (W). Each step its target is max(draw, floor): draw is what
//   the GPU's work (training, fill) would draw this step, floor the primary floor in force.
// - Target at or above e: e rises towards it by at most ramp_up·dt; the ramp-down timer resets.
//   A draw above e + ramp_up·dt is held back by lowering the clock (the simulator asks
//   ceiling_w() before the step and slows the work): the ramp-up limit costs throughput.
// - Target below e: the GPU holds e (burning the difference) until the target has been below e
//   for hysteresis_ms, then e falls by at most ramp_down·dt per step, never below the target.
// - The GPU draws max(draw, e): the burn (energy cost) is max(0, e − draw).
// - The floor is floor_frac × the TMP ceiling; flexwatt takes the ceiling as the GPU's power cap
//   in force (the CUDA 13.1 nvml.h: "primary floor = TMP ceiling × floor percentage"; that the
//   ceiling is the enforced cap is an assumption). The floor applies while a job holds the GPU
//   (an assumption: at job end it is released and the envelope ramps down at ramp_down, the
//   "burn at job end" NVIDIA describes for GB300).
// Units: W, W/s, ms (hysteresis, as NVML), s. Pure value types; thread-compatible.

#include <limits>
#include <string>
#include <string_view>

#include "core/status.hpp"

namespace fw::sim {

inline constexpr double kNoRampLimit = std::numeric_limits<double>::infinity();

struct SmoothingSettings {
  bool enabled = false;
  double floor_frac = 0;                    // of the TMP ceiling (the cap), 0..1
  double ramp_up_w_per_s = kNoRampLimit;    // > 0; infinity: no limit
  double ramp_down_w_per_s = kNoRampLimit;  // > 0; infinity: no limit
  double ramp_down_hysteresis_ms = 0;       // >= 0
};

// A GPU model's smoothing capability: the settable floor range. Sources in
// docs/stabilization.md; nullptr for a model without power smoothing.
struct SmoothingCapability {
  std::string_view model;  // "gb200", "b200"
  double floor_frac_min = 0, floor_frac_max = 0;
};
const SmoothingCapability* find_smoothing_capability(std::string_view model);
// Comma-separated names, for messages.
const char* smoothing_capability_names();

// InvalidArgument naming the field when a setting is outside the capability's range (floor) or
// not positive (rates) / negative (hysteresis). Disabled settings are always valid.
Status validate(const SmoothingSettings& s, const SmoothingCapability& cap);

// "floor 60% up 100 W/s down 100 W/s hyst 500 ms" or "off".
std::string describe(const SmoothingSettings& s);

struct SmoothingState {
  double envelope_w = std::numeric_limits<double>::quiet_NaN();  // NaN: before the first step
  double below_s = 0;  // how long the target has been below the envelope
};

// The most the GPU may draw in the next step of dt_s (the ramp-up limit): e + ramp_up·dt;
// infinity when disabled or before the first step.
double smoothing_ceiling_w(const SmoothingSettings& s, const SmoothingState& st, double dt_s);

// One step of dt_s: the work draws draw_w (>= 0), the floor in force is floor_w (0: none).
// Returns the power the GPU draws, >= draw_w (the burn is the difference). Disabled: draw_w.
double smoothing_step(const SmoothingSettings& s, SmoothingState& st, double draw_w, double floor_w,
                      double dt_s);

}  // namespace fw::sim

#pragma once
// Simulated GPU: presets (hardware facts from the GPU catalogue, hw/gpu_catalog.hpp, plus the
// model-fit constants defined here), the power model and the firmware's cap enforcement.
// Everything here is simulated; constants name their source (docs/sources.md section)
// or say they are an assumption. See docs/simulator.md.
//
// Power model, with x = f_sm / f_max the SM clock ratio (0 < x <= 1):
//   P(x) = P_ctx - P_idle_sm·(1 - x) + K_sm·u·phi(x) + K_mem·m·s(c, x)
//   phi(x) = x·(v0 + (1 - v0)·x)^2        (dynamic power ∝ f·V², V affine in f)
//   s(c, x) = 1 / (c/x + (1 - c))           (work rate of a phase with compute-bound share c)
// u: SM activity at f_max (0..~1.4; above 1 means bursts beyond the nameplate), m: memory
// traffic at f_max (0..1), c: the share of the phase's time that is compute bound.

#include <string_view>

#include "hw/gpu_catalog.hpp"

namespace fw::sim {

// A simulated GPU: the catalogue's hardware facts (hw/gpu_catalog.hpp: name, nameplate, cap
// range, idle powers, clocks, memory) plus the constants this power model is fitted with.
struct GpuPreset : hw::GpuCatalogEntry {
  double idle_sm_w;    // part of the context idle that follows the SM clock
  double sm_power_w;   // K_sm: SM dynamic power at u = 1, x = 1
  double mem_power_w;  // K_mem: memory power at m = 1
  double v0;           // V/V_max extrapolated to zero clock (voltage offset)
};

// The catalogue's GPUs that have a model (one fit entry each in gpu_model.cpp, in the
// catalogue's names; docs/simulator.md says which constants are assumed). nullptr when unknown.
const GpuPreset* find_gpu_preset(std::string_view name);
// Comma-separated preset names, in fit order (for error messages), built from the fit entries.
const char* gpu_preset_names();

// What a workload asks of one GPU during an interval (time-weighted over it).
struct Load {
  double u = 0;  // SM activity at f_max
  double m = 0;  // memory traffic at f_max
  double c = 0;  // compute-bound share
};

inline double clock_speed(double c, double x) { return 1.0 / (c / x + (1.0 - c)); }
inline double clock_phi(double x, double v0) {
  const double v = v0 + (1.0 - v0) * x;
  return x * v * v;
}

// P(x) for a GPU with a CUDA context running `load` at clock ratio x.
inline double gpu_power_w(const GpuPreset& g, const Load& load, double x) {
  return g.idle_ctx_w - g.idle_sm_w * (1.0 - x) + g.sm_power_w * load.u * clock_phi(x, g.v0) +
         g.mem_power_w * load.m * clock_speed(load.c, x);
}

// The clock ratio in [x_min, 1] at which P(x) = cap_w for `load` (1 when P(1) <= cap_w,
// x_min when even P(x_min) > cap_w). `x_guess` warm-starts the Newton iteration.
double clock_for_cap(const GpuPreset& g, const Load& load, double cap_w, double x_guess);

// ---- Firmware cap regulation (docs/simulator.md "Cap enforcement") -------------------------
// The firmware's effective clock x_eff ∈ (0, 1]: at or above x_min = f_min/f_max it is the SM
// clock ratio; below x_min the SM clock stays at x_min and the GPU is clock-gated for a share
// 1 − x_eff/x_min of the time (duty), so power can reach the device's minimum cap.
struct ClockDuty {
  double x = 1;     // SM clock ratio, [x_min, 1]
  double duty = 1;  // share of time the SMs run, (0, 1]
};
ClockDuty clock_duty(const GpuPreset& g, double x_eff);

// Constants of the regulator. Defaults: see docs/simulator.md (fitted to the A100 sweep or
// assumptions, each marked there).
struct FirmwareParams {
  double sense_tau_s = 0.3;       // first-order filter on the load the firmware sees
  double clock_down_tau_s = 0.2;  // clock lag when the target is below the clock
  double clock_up_tau_s = 1.5;    // clock lag when the target is above it (slow release)
  double margin_frac = 0.015;     // setpoint = cap · (1 − margin_frac)
};

// Per-step filter/lag coefficients of FirmwareParams at integration step dt_s.
struct FirmwareCoeffs {
  double a_sense = 1, a_down = 1, a_up = 1;
};
FirmwareCoeffs firmware_coeffs(const FirmwareParams& fp, double dt_s);

// Per-GPU regulator state; a value type.
struct FirmwareState {
  Load filt;            // filtered load
  double x_eff = 1;     // effective clock (see clock_duty)
  double x_target = 1;  // the regulator's target for x_eff
};

// The effective clock in (0, 1] at which P = setpoint_w for `load` (clock_for_cap, extended
// below x_min by clock gating down to a duty of kMinDuty). `offset_w` is static power outside
// the model (per-GPU heterogeneity) that the firmware also sees.
inline constexpr double kMinDuty = 0.05;
double effective_clock_for_cap(const GpuPreset& g, const Load& load, double setpoint_w,
                               double x_guess);

// One integration step (coefficients k from firmware_coeffs): filter the sensed load `last` (the
// load over the last step, duty-scaled), retarget, move the clock. `offset_w`: static power the
// firmware sees on top of the model (per-GPU offset); it lowers the setpoint by as much.
void firmware_step(const GpuPreset& g, const FirmwareParams& fp, const FirmwareCoeffs& k,
                   FirmwareState& st, const Load& last, double cap_w, double offset_w);

}  // namespace fw::sim

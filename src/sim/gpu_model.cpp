#include "sim/gpu_model.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>

namespace fw::sim {
namespace {

// The model-fit constants of each catalogue GPU (hardware facts: hw/gpu_catalog.cpp).
// Sources: docs/sources.md §2.3/§2.4 (the powers the K constants are fitted to), §2.6
// (caps act on the SM clock only). Values marked "assumption" have no published measurement
// behind them.
struct ModelFit {
  std::string_view name;  // catalogue key
  double idle_sm_w, sm_power_w, mem_power_w, v0;
};

constexpr ModelFit kFits[] = {
    {
        .name = "a100-sxm4-80gb",
        .idle_sm_w = 5,     // assumption: most of the +26 W context overhead is memory
                            // clock (unchanged under caps, §2.6); fitted to the A100 sweep
        .sm_power_w = 255,  // fitted: training ≈ 380 W/GPU uncapped (A100 sweep, pt row)
        .mem_power_w = 85,  // fitted: decode 280–305 W (§2.4); assumption of the split
        .v0 = 0.45,         // assumption, fitted to the A100 sweep's throughput-vs-cap
    },
    {
        .name = "h100-sxm5",
        .idle_sm_w = 10,     // assumption (as A100: mostly memory clock)
        .sm_power_w = 470,   // fitted: dense training 530–575 W/GPU (§2.3)
        .mem_power_w = 150,  // assumption (memory power 30–70 W idle, §2.2)
        .v0 = 0.5,           // assumption (GH100), fitted to the H200 PFI medians (§1b)
    },
    {
        .name = "h200-sxm",
        .idle_sm_w = 10,     // assumption
        .sm_power_w = 460,   // assumption: as H100, slightly less headroom
        .mem_power_w = 190,  // assumption: HBM3e takes a larger share (§2.6)
        .v0 = 0.5,           // assumption, fitted to the H200 PFI medians (§1b)
    },
    {
        .name = "a40",
        .idle_sm_w = 5,     // assumption (as A100)
        .sm_power_w = 190,  // assumption: not fitted (no A40 power-vs-cap data in the sweep);
        .mem_power_w = 45,  // scaled from the A100 fit to a 300 W part with GDDR6
        .v0 = 0.45,         // assumption (as A100)
    },
    {
        .name = "a100-pcie-80gb",
        .idle_sm_w = 5,     // assumption (as A100-SXM)
        .sm_power_w = 190,  // assumption: the A100-SXM fit scaled to the 300 W PCIe part
        .mem_power_w = 64,  // assumption: as above
        .v0 = 0.45,         // assumption (GA100, as A100-SXM)
    },
};
constexpr size_t kNumPresets = sizeof(kFits) / sizeof(kFits[0]);

// Catalogue facts + fit, built once on first use (the catalogue is constant-initialised).
const std::array<GpuPreset, kNumPresets>& presets() {
  static const std::array<GpuPreset, kNumPresets> table = [] {
    std::array<GpuPreset, kNumPresets> t{};
    for (size_t i = 0; i < kNumPresets; ++i) {
      const ModelFit& f = kFits[i];
      const hw::GpuCatalogEntry* spec = hw::find_gpu(f.name);
      if (spec == nullptr) std::abort();  // programmer error: a fit without a catalogue entry
      t[i] = GpuPreset{*spec, f.idle_sm_w, f.sm_power_w, f.mem_power_w, f.v0};
    }
    return t;
  }();
  return table;
}

}  // namespace

const GpuPreset* find_gpu_preset(std::string_view name) {
  for (const auto& p : presets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const char* gpu_preset_names() {
  static const std::string names = [] {
    std::string s;
    for (const ModelFit& f : kFits) s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
  }();
  return names.c_str();
}

double clock_for_cap(const GpuPreset& g, const Load& load, double cap_w, double x_guess) {
  const double x_min = g.sm_clock_min_mhz / g.sm_clock_max_mhz;
  if (gpu_power_w(g, load, 1.0) <= cap_w) return 1.0;
  if (gpu_power_w(g, load, x_min) >= cap_w) return x_min;
  // P is increasing in x: bracketed Newton from the previous target.
  double lo = x_min, hi = 1.0;
  double x = std::clamp(x_guess, x_min, 1.0);
  const double k_idle = g.idle_sm_w;
  for (int i = 0; i < 8; ++i) {
    const double f = gpu_power_w(g, load, x) - cap_w;
    if (std::fabs(f) < 0.05) break;
    if (f > 0)
      hi = x;
    else
      lo = x;
    const double v = g.v0 + (1 - g.v0) * x;
    const double dphi = v * v + 2 * x * v * (1 - g.v0);
    const double s = clock_speed(load.c, x);
    const double ds = load.c / (x * x) * s * s;
    const double df = k_idle + g.sm_power_w * load.u * dphi + g.mem_power_w * load.m * ds;
    double nx = df > 0 ? x - f / df : 0.5 * (lo + hi);
    if (!(nx > lo && nx < hi)) nx = 0.5 * (lo + hi);
    x = nx;
  }
  return x;
}

ClockDuty clock_duty(const GpuPreset& g, double x_eff) {
  const double x_min = g.sm_clock_min_mhz / g.sm_clock_max_mhz;
  if (x_eff >= x_min) return {std::min(1.0, x_eff), 1.0};
  return {x_min, std::max(kMinDuty, x_eff / x_min)};
}

double effective_clock_for_cap(const GpuPreset& g, const Load& load, double setpoint_w,
                               double x_guess) {
  const double x_min = g.sm_clock_min_mhz / g.sm_clock_max_mhz;
  const double x = clock_for_cap(g, load, setpoint_w, std::max(x_guess, x_min));
  if (x > x_min) return x;
  // Clock gating: static part at x_min plus duty · dynamic part (SM and memory traffic).
  const double p_static = gpu_power_w(g, Load{}, x_min);
  const double p_dyn = gpu_power_w(g, load, x_min) - p_static;
  if (p_dyn <= 0 || p_static + p_dyn <= setpoint_w) return x_min;
  const double duty = std::clamp((setpoint_w - p_static) / p_dyn, kMinDuty, 1.0);
  return duty * x_min;
}

FirmwareCoeffs firmware_coeffs(const FirmwareParams& fp, double dt_s) {
  return {1.0 - std::exp(-dt_s / fp.sense_tau_s), 1.0 - std::exp(-dt_s / fp.clock_down_tau_s),
          1.0 - std::exp(-dt_s / fp.clock_up_tau_s)};
}

void firmware_step(const GpuPreset& g, const FirmwareParams& fp, const FirmwareCoeffs& k,
                   FirmwareState& st, const Load& last, double cap_w, double offset_w) {
  const double a_sense = k.a_sense;
  st.filt.u += a_sense * (last.u - st.filt.u);
  st.filt.m += a_sense * (last.m - st.filt.m);
  st.filt.c += a_sense * (last.c - st.filt.c);
  // The filter sees the duty-scaled load; the target is solved for the load at full duty.
  const double duty = clock_duty(g, st.x_eff).duty;
  const Load full{st.filt.u / duty, st.filt.m / duty, st.filt.c};
  const double setpoint = cap_w * (1.0 - fp.margin_frac) - offset_w;
  st.x_target = effective_clock_for_cap(g, full, setpoint, st.x_target);
  st.x_eff += (st.x_target < st.x_eff ? k.a_down : k.a_up) * (st.x_target - st.x_eff);
}

}  // namespace fw::sim

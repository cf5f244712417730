#include "hw/gpu_catalog.hpp"

#include <string>

namespace fw::hw {
namespace {

// Sources: docs/sources.md §2.1 (limits, idle, clocks), §2.2 (power.draw averaging),
// §1b (H200). Values marked "assumption" have no published measurement behind them.
constexpr GpuCatalogEntry kCatalog[] = {
    {
        .name = "a100-sxm4-80gb",
        .device_name = "NVIDIA A100-SXM4-80GB",
        .tdp_w = 400,              // §2.1 default = max limit
        .default_cap_w = 400,      // §2.1
        .min_cap_w = 100,          // §2.1 min settable limit
        .max_cap_w = 400,          // §2.1
        .idle_bare_w = 54,         // §2.1 bare idle 53.7 W (Parking Tax)
        .idle_ctx_w = 80,          // §2.1 idle with CUDA context 80.0 W
        .sm_clock_max_mhz = 1410,  // §2.1
        .sm_clock_idle_mhz = 210,  // §2.1
        .sm_clock_min_mhz = 210,   // assumption: throttling floor = idle clock
        .power_avg_1s = false,     // §2.2: GA100 power.draw is instantaneous
        .hbm_gb = 80,
        .blocking_w = 83.64,  // Perseus artifact notebook (ml-energy/zeus, branch kronos,
                              // evaluation.ipynb) p_blocking A100: its A100-PCIe runs and
                              // the A100-SXM emulation use the same figure
        .family = "a100",
    },
    {
        .name = "h100-sxm5",
        .device_name = "NVIDIA H100 80GB HBM3",
        .tdp_w = 700,              // §2.1
        .default_cap_w = 700,      // §2.1
        .min_cap_w = 200,          // §2.1 (DGX H100 AllowableMin)
        .max_cap_w = 700,          // §2.1
        .idle_bare_w = 72,         // §2.1 71.8 / 72.5 W
        .idle_ctx_w = 122,         // §2.1 121.7 W
        .sm_clock_max_mhz = 1980,  // §2.1
        .sm_clock_idle_mhz = 345,  // §2.1
        .sm_clock_min_mhz = 345,   // assumption: throttling floor = idle clock
        .power_avg_1s = true,      // §2.2: Hopper power.draw = trailing 1 s average
        .hbm_gb = 80,
        .blocking_w = 0,  // unknown: no measurement found (--blocking-w / blocking_w required)
        .family = "h100",
    },
    {
        .name = "h200-sxm",
        .device_name = "NVIDIA H200",  // assumption: not yet checked on a device
        .tdp_w = 700,                  // §2.1 / §1b (700 W TDP)
        .default_cap_w = 700,          // §2.1
        .min_cap_w = 200,              // §2.1 (sweeps start at 200 W)
        .max_cap_w = 700,              // §2.1
        .idle_bare_w = 72,             // assumption: H200 idle not found, H100's used (§2.1)
        .idle_ctx_w = 122,             // assumption: as H100
        .sm_clock_max_mhz = 1980,      // assumption: same GH100 die as H100
        .sm_clock_idle_mhz = 345,      // assumption: as H100
        .sm_clock_min_mhz = 345,       // assumption
        .power_avg_1s = true,          // §2.2
        .hbm_gb = 141,                 // §1b
        .blocking_w = 0,  // unknown: no measurement found (--blocking-w / blocking_w required)
        .family = "h200",
    },
    {
        .name = "a40",
        .device_name = "NVIDIA A40",
        .tdp_w = 300,              // NVIDIA A40 datasheet: max power 300 W
        .default_cap_w = 300,      // datasheet (default = max)
        .min_cap_w = 100,          // assumption: nvidia-smi's min limit on A40 (not checked here)
        .max_cap_w = 300,          // datasheet
        .idle_bare_w = 30,         // assumption (no measurement found)
        .idle_ctx_w = 60,          // assumption: below the Perseus notebook's 70.38 W blocking
        .sm_clock_max_mhz = 1740,  // datasheet boost clock; the Perseus A40 profile's top clock
        .sm_clock_idle_mhz = 210,  // assumption (as GA100)
        .sm_clock_min_mhz = 210,   // assumption
        .power_avg_1s = false,     // assumption: Ampere, as GA100 (§2.2)
        .hbm_gb = 48,              // datasheet: 48 GB GDDR6
        .blocking_w = 70.38,       // Perseus artifact notebook p_blocking A40
        .family = "",              // matched by name only (no family fallback for it)
    },
    {
        .name = "a100-pcie-80gb",
        .device_name = "NVIDIA A100 80GB PCIe",
        .tdp_w = 300,              // NVIDIA A100 datasheet: PCIe 80GB max TDP 300 W
        .default_cap_w = 300,      // datasheet
        .min_cap_w = 150,          // assumption: nvidia-smi's min limit (the Zeus runs go to 150 W)
        .max_cap_w = 300,          // datasheet; the Zeus runs sweep 150-300 W
        .idle_bare_w = 40,         // assumption (no measurement found)
        .idle_ctx_w = 65,          // assumption: below the notebook's 83.64 W A100 blocking
        .sm_clock_max_mhz = 1410,  // datasheet (GA100)
        .sm_clock_idle_mhz = 210,  // as A100-SXM (§2.1)
        .sm_clock_min_mhz = 210,   // assumption
        .power_avg_1s = false,     // §2.2: GA100 power.draw is instantaneous
        .hbm_gb = 80,
        .blocking_w = 83.64,  // Perseus artifact notebook p_blocking A100 (measured on its
                              // A100-PCIe runs)
        .family = "a100",     // second of its family: a100-sxm4-80gb stands for "a100"
    },
};

}  // namespace

std::span<const GpuCatalogEntry> gpu_catalog() { return kCatalog; }

const GpuCatalogEntry* find_gpu(std::string_view name) {
  for (const auto& g : kCatalog) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

const GpuCatalogEntry* find_gpu_by_device_name(std::string_view device_name) {
  for (const auto& g : kCatalog) {
    if (g.device_name == device_name) return &g;
  }
  return nullptr;
}

const GpuCatalogEntry* find_gpu_family(std::string_view lower_name) {
  for (const auto& g : kCatalog) {
    if (!g.family.empty() && lower_name.find(g.family) != std::string_view::npos) return &g;
  }
  return nullptr;
}

const char* gpu_names() {
  static const std::string names = [] {
    std::string s;
    for (const auto& g : kCatalog) s += (s.empty() ? "" : ", ") + std::string(g.name);
    return s;
  }();
  return names.c_str();
}

}  // namespace fw::hw

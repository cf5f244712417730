#pragma once
// The GPU catalogue, the one list of GPUs flexwatt knows: hardware facts about each model
// (GpuCatalogEntry), shared by the
// simulator (sim/gpu_model.hpp adds its model-fit constants on top), the trace analysis
// (nameplate of a trace's GPU models) and the node agent (a device's settable cap range and
// default when NVML does not say).
//
// Split with sim/: a fact about the hardware (nameplate, settable cap range, idle powers,
// clocks, memory, how the driver reports power) lives here, whether measured or, where no
// measurement was found, assumed (the table says which). Constants fitted so that the
// simulator's power model reproduces measurements (K_sm, K_mem, v0, the SM-clock share of idle
// power) stay in sim/gpu_model.cpp. Sources of the numbers: docs/simulator.md.
//
// Units: watts, MHz, GB. Entries are immutable and live for the whole program.

#include <span>
#include <string_view>

namespace fw::hw {

struct GpuCatalogEntry {
  std::string_view name;         // catalogue key, e.g. "h100-sxm5" (lower case, as in scenarios)
  std::string_view device_name;  // what NVML's nvmlDeviceGetName reports for it
  double tdp_w;                  // nameplate (TDP)
  double default_cap_w;          // the cap the driver applies at boot
  double min_cap_w;              // settable cap range
  double max_cap_w;
  double idle_bare_w;       // no CUDA context, idle clock
  double idle_ctx_w;        // CUDA context loaded, SM clock at max
  double sm_clock_max_mhz;  // highest SM clock
  double sm_clock_idle_mhz;
  double sm_clock_min_mhz;  // lowest clock the firmware throttles to under a cap
  bool power_avg_1s;        // power.draw is a trailing 1 s average (Hopper); else instantaneous
  double hbm_gb;            // device memory
  // Power of a GPU that waits in point-to-point communication (a pipeline stage blocking for a
  // neighbour): measured, from the Perseus artifact's notebook (p_blocking); 0 where flexwatt
  // has no measurement (the pipeline planner and pipeline scenarios then demand it).
  double blocking_w;
  // Lower-case family a device name that matches no entry exactly is recognised by (a
  // substring: "a100" for "NVIDIA A100-SXM4-40GB"); the first entry of a family in catalogue
  // order stands for it. Empty: matched by name only.
  std::string_view family;
};

// Every catalogue entry, in a fixed order.
std::span<const GpuCatalogEntry> gpu_catalog();
// The entry named `name` (exact match); nullptr when unknown.
const GpuCatalogEntry* find_gpu(std::string_view name);
// The entry whose device_name is `device_name` (NVML's name, exact match); nullptr when unknown.
const GpuCatalogEntry* find_gpu_by_device_name(std::string_view device_name);
// The first entry whose family occurs in `lower_name` (a lower-case device name); nullptr when
// none does.
const GpuCatalogEntry* find_gpu_family(std::string_view lower_name);
// Comma-separated catalogue names (for error messages): "a100-sxm4-80gb, h100-sxm5, ...".
const char* gpu_names();

}  // namespace fw::hw

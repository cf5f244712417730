#pragma once
// NvmlGpuSource: GpuTelemetrySource over NVML. Read-only: it never changes a GPU setting (cap
// writes: actuation/nvml_power_cap_actuator.hpp).
//
// open() enumerates the GPUs and probes each selected one once (a GPU that is not selected is
// never touched, so a broken or forbidden GPU elsewhere on the node does not stop sampling):
//  - power: power_w is the averaged field (NVML_FI_DEV_POWER_AVERAGE, 185) where the device
//    answers it, else nvmlDeviceGetPowerUsage, else the instant field (186); the choice and its
//    averaging are recorded in GpuDeviceInfo::power_source / power_averaging. The instant field
//    is also read into power_instant_w where the device answers it (has_instant). The probe
//    performs one read of each.
//  - a GPU whose probe fails as unreachable (NVML_ERROR_GPU_IS_LOST and the other "gone"
//    codes: StatusCode::kUnavailable) is skipped and listed in lost(); the others open. open()
//    fails only when every selected GPU is unreachable.
//  - energy: nvmlDeviceGetTotalEnergyConsumption is read twice; used when both reads succeed and
//    do not go backwards, else energy is integrated from power (GpuDeviceInfo::energy_source).
//    A counter that goes backwards later (driver reload) is treated as restarted from 0 so the
//    reported energy stays non-decreasing.
//  - enforced limit, utilisation, SM clock, temperature, clock-event reasons: a reading the
//    device answers NOT_SUPPORTED (or the library lacks) is left NaN and listed in
//    GpuDeviceInfo::unsupported; any other failure fails open().
// Every NVML return code goes through nvml::NvmlLibrary::check (names the call and GPU). NVML's
// mW/mJ/percent are converted to W/J/0..1 here (by nvml::kSiPerMilli, nvml_api.hpp, the one
// factor the cap writer uses too). Not thread-safe.

#include <memory>
#include <string>
#include <vector>

#include "nvml/nvml_library.hpp"
#include "telemetry/gpu_source.hpp"

namespace fw {

class NvmlGpuSource : public GpuTelemetrySource {
 public:
  // Probes `gpus` (NVML indices; empty: all). NotFound naming the index and the count for an
  // index NVML does not have.
  // The library may be shared (e.g. with an actuation/ NvmlPowerCapActuator).
  static Result<std::unique_ptr<NvmlGpuSource>> open(std::shared_ptr<const nvml::NvmlLibrary> lib,
                                                     const std::vector<int>& gpus = {});
  // True for the GPUs open() probed; info() and read() REQUIRE it.
  bool probed(int gpu) const { return gpu >= 0 && gpu < device_count() && devs_[gpu].probed; }

  int device_count() const override { return static_cast<int>(devs_.size()); }
  const GpuDeviceInfo& info(int gpu) const override { return devs_[gpu].info; }
  Status read(int gpu, double now_s, GpuSample& out) override;

  const nvml::NvmlLibrary& library() const { return *lib_; }

  // The selected GPUs open() found unreachable, with the reason.
  struct LostGpu {
    int gpu = -1;
    std::string reason;
  };
  const std::vector<LostGpu>& lost() const { return lost_; }
  bool lost(int gpu) const {
    for (const LostGpu& l : lost_) {
      if (l.gpu == gpu) return true;
    }
    return false;
  }

 private:
  struct Device {
    bool probed = false;
    nvml::Device handle = nullptr;
    GpuDeviceInfo info;
    bool has_limit = false, has_util = false, has_clock = false, has_temp = false;
    bool has_reasons = false;
    // Energy state.
    unsigned long long last_counter_mj = 0;  // NOLINT(runtime/int)
    double counter_offset_j = 0;
    bool has_prev = false;
    double prev_time_s = 0, prev_power_w = 0, integrated_j = 0;
  };

  explicit NvmlGpuSource(std::shared_ptr<const nvml::NvmlLibrary> lib) : lib_(std::move(lib)) {}
  Status probe(int gpu, Device& d);
  Status read_power_w(int gpu, const Device& d, PowerSource source, double& power_w) const;
  // Probes an optional reading: true when supported, false on NOT_SUPPORTED or a missing
  // function (recorded in info.unsupported); other failures are returned in `st`.
  bool optional_ok(nvml::Return rc, bool fn_present, const char* call, int gpu, Device& d,
                   Status& st) const;

  std::shared_ptr<const nvml::NvmlLibrary> lib_;
  std::vector<Device> devs_;
  std::vector<LostGpu> lost_;
};

}  // namespace fw

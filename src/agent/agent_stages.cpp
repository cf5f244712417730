#include "agent/agent_stages.hpp"

#include <algorithm>
#include <cmath>

#include "agent/fleet_budget.hpp"

namespace fw::agent {

bool UnlistedGpusStage::apply(const PlantInfo& info, const Snapshot&, Command& cmd) {
  auto listed = [&info](size_t g) {
    for (const JobInfo& j : info.jobs) {
      if (std::find(j.gpus.begin(), j.gpus.end(), static_cast<int>(g)) != j.gpus.end()) {
        return true;
      }
    }
    return false;
  };
  for (size_t g = 0; g < cmd.power_cap_w.size(); ++g) {
    if (!listed(g)) cmd.power_cap_w[g] = std::nan("");
  }
  for (size_t g = 0; g < cmd.gpu_settings.size(); ++g) {
    if (!listed(g)) cmd.gpu_settings[g] = kNoGpuSettings;
  }
  return false;
}

bool FailSafeStage::apply(const PlantInfo&, const Snapshot&, Command& cmd) {
  if (!active) return false;
  cmd = safe;
  return true;
}

bool ShareGuardStage::apply(const PlantInfo& info, const Snapshot& latest, Command& cmd) {
  return active && clamp_caps_to_share(cmd, info, latest, share_w);
}

}  // namespace fw::agent

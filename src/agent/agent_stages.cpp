#include "agent/agent_stages.hpp"

#include <algorithm>
#include <cmath>

#include "agent/fleet_budget.hpp"

namespace fw::agent {

bool UnlistedGpusStage::apply(const PlantInfo& info, const Snapshot&, Command& cmd) {
  for (size_t g = 0; g < cmd.power_cap_w.size(); ++g) {
    bool listed = false;
    for (const JobInfo& j : info.jobs) {
      listed =
          listed || std::find(j.gpus.begin(), j.gpus.end(), static_cast<int>(g)) != j.gpus.end();
    }
    if (!listed) cmd.power_cap_w[g] = std::nan("");
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

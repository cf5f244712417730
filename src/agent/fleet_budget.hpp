#pragma once
// The node agent's record for the fleet coordinator (fleet::NodeRecord), built from what the
// agent knows: the plant's GPUs and jobs and the last snapshot. Pure.
//   gpus, nameplate_w = sum of max_cap_w, min_w = sum of min_cap_w; draw_w and cap_w = sums
//   of the readings that are set (0 when none); one JobRecord per plant job (its GPUs, their
//   draw; pfi from job_pfi by job name through fleet::set_job_pfi, the hook for a declared or
//   measured PFI; elasticity and pfi 0: unknown, the per-job allocators then use PFI 1).

#include <map>
#include <string>

#include "control/command.hpp"
#include "control/plant.hpp"
#include "fleet/keys.hpp"
#include "telemetry/snapshot.hpp"

namespace fw::agent {

fleet::NodeRecord fleet_record(const std::string& node, const PlantInfo& info,
                               const Snapshot& latest, double now_unix_s,
                               const std::map<std::string, double>& job_pfi = {});

// The node's floor: the sum of its GPUs' minimum caps. A coordinator budget below it (a 0 W
// grid target split over the site) is taken as the floor: every GPU at its minimum cap.
double node_floor_w(const PlantInfo& info);

// The share guard of a node that follows a coordinator: the caps `command` leaves in force
// (its set values; where unset, the cap read in `latest`, else the GPU's maximum) must sum to
// at most max(share_w, floor). When they sum above, every GPU's cap is lowered toward its
// minimum by the same fraction of its headroom above the minimum, so the sum is exactly that;
// every GPU of the command is then set. Returns whether it changed the command. A node's
// controller may still lift caps up to its share in low-draw phases; never above it.
bool clamp_caps_to_share(Command& command, const PlantInfo& info, const Snapshot& latest,
                         double share_w);

}  // namespace fw::agent

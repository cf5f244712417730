#pragma once
// The node agent's record for the fleet coordinator (fleet::NodeRecord), built from what the
// agent knows: the plant's GPUs and jobs and the last snapshot. Pure.
//   gpus, nameplate_w = sum of max_cap_w, min_w = sum of min_cap_w; draw_w and cap_w = sums
//   of the readings that are set (0 when none); one JobRecord per plant job (its GPUs, their
//   draw; pfi from job_pfi by job name through fleet::set_job_pfi, the hook for a declared or
//   measured PFI; elasticity and pfi 0: unknown, the per-job allocators then use PFI 1).

#include <map>
#include <string>

#include "control/plant.hpp"
#include "fleet/keys.hpp"
#include "telemetry/snapshot.hpp"

namespace fw::agent {

fleet::NodeRecord fleet_record(const std::string& node, const PlantInfo& info,
                               const Snapshot& latest, double now_unix_s,
                               const std::map<std::string, double>& job_pfi = {});

}  // namespace fw::agent

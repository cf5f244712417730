#pragma once
// JobChannel: the node's training jobs as the control path sees them (the agent's JobRegistry
// behind an interface, so runtime/ does not depend on agent/). Jobs are listed in a stable
// order; generation() changes whenever a job joins or leaves.
//
// Thread-safety: implementations are called from the loop thread only, but may be fed by others.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "control/plant.hpp"
#include "vocab/snapshot.hpp"

namespace fw {

struct ChannelJob {
  std::string id;
  JobInfo info;
  JobReading reading;            // progress as last reported (reading.job is set by the plant)
  double report_age_s = kUnset;  // seconds since the job last reported
  // The job's client runs a fill workload when told (it registered with "fill": true): the
  // plant hands it each of its GPUs' fill target (set_fill).
  bool fill = false;
};

class JobChannel {
 public:
  virtual ~JobChannel() = default;
  virtual uint64_t generation() const = 0;
  virtual std::vector<ChannelJob> jobs() const = 0;
  // Hands the knobs to job `id` (NaN: keep); unknown ids are ignored.
  virtual void set_knobs(const std::string& id, const KnobValues& k) = 0;
  // Hands job `id` its GPUs' fill targets (NVML index -> W; 0: off); unknown ids are ignored.
  // Default: no channel carries it.
  virtual void set_fill(const std::string& /*id*/, const std::map<int, double>& /*fill_w*/) {}
};

}  // namespace fw

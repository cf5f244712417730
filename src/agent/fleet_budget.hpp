#pragma once
// The node agent's record for the fleet coordinator (fleet::NodeRecord), built from what the
// agent knows: the plant's GPUs and jobs and the last snapshot. Pure.
//   gpus, nameplate_w = sum of max_cap_w, min_w = sum of min_cap_w; draw_w and cap_w = sums
//   of the readings that are set (0 when none); one JobRecord per plant job (its GPUs, their
//   draw; pfi from job_pfi by job name through fleet::set_job_pfi, the hook for a declared or
//   measured PFI; elasticity and pfi 0: unknown, the per-job allocators then use PFI 1;
//   starts_at_unix_s and ends_at_unix_s from the job's announced starts_in_s and ends_in_s in
//   `latest`, when it announces them).

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/plant.hpp"
#include "fleet/keys.hpp"
#include "vocab/command.hpp"
#include "vocab/snapshot.hpp"

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
// The draw curve a node measured (keys.hpp NodeRecord::draw_curve, the coordinator's site-loop
// feed-forward) when none is configured: its mean draw against the node budget in force, in
// kBins equal bins of budget between the floor and the nameplate; a point per bin with at
// least min_samples samples (mean budget, mean draw), budgets increasing by construction.
// Fewer than 2 such bins: no curve (a node that only ran uncapped knows one point). The
// means are over the whole run (a job that changes its draw shifts them slowly).
class MeasuredDrawCurve {
 public:
  static constexpr int kBins = 8;
  MeasuredDrawCurve(double floor_w, double nameplate_w, int min_samples = 20)
      : floor_w_(floor_w), nameplate_w_(nameplate_w), min_samples_(min_samples) {}
  void add(double budget_w, double draw_w);
  std::vector<std::pair<double, double>> curve() const;

 private:
  struct Bin {
    double budget = 0, draw = 0;
    int n = 0;
  };
  double floor_w_, nameplate_w_;
  int min_samples_;
  Bin bins_[kBins];
};

// A job's sweep per GPU ([cap_w, draw_w] pairs, caps increasing: `flexwatt sweep`'s cap and
// realized power columns) as the node's draw curve: both scaled by the node's GPUs.
std::vector<std::pair<double, double>> node_draw_curve(
    const std::vector<std::pair<double, double>>& per_gpu, int gpus);

bool clamp_caps_to_share(Command& command, const PlantInfo& info, const Snapshot& latest,
                         double share_w);

}  // namespace fw::agent

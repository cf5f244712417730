#pragma once
// Allocator: how the coordinator splits a site budget across live nodes (and their jobs).
//
// Contract of split(): given budget_w >= 0 and the live nodes' records, returns one watt
// figure per node (same order) with
//   - min_w <= watts <= nameplate_w for every node when budget_w >= sum(min_w);
//     otherwise every node gets the same fraction of its min_w (the site cannot be in budget
//     above its floors; the caller reports it);
//   - sum(watts) <= budget_w + 1e-6 whenever budget_w >= sum(min_w).
// Allocators are stateless and thread-compatible.
//
// Seam for src/allocation (equal / pfi / greedy / optimal): write a class deriving from
// Allocator that maps each NodeRecord (and its JobRecords: draw, elasticity, pfi, min_w) onto
// that library's request, calls it, and sums its per-job watts back per node; then add its
// name to make_allocator() in allocator.cpp. Nothing else in the coordinator changes.

#include <memory>
#include <string>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/status.hpp"
#include "fleet/keys.hpp"

namespace fw::fleet {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string name() const = 0;
  virtual std::vector<double> split(double budget_w,
                                    const std::vector<NodeRecord>& nodes) const = 0;
};

// Bounded weighted water-filling: watts_i = clamp(lambda * weight_i, lo_i, hi_i) with lambda
// chosen so the sum meets budget_w (the shared core of the allocators below). weights > 0.
std::vector<double> water_fill(double budget_w, const std::vector<double>& lo,
                               const std::vector<double>& hi, const std::vector<double>& weight);

// Equal per GPU, within each node's [min_w, nameplate_w].
class EqualAllocator final : public Allocator {
 public:
  std::string name() const override { return "equal"; }
  std::vector<double> split(double budget_w, const std::vector<NodeRecord>& nodes) const override;
};

// Proportional to demand (the node's current draw, at least 5 % of its nameplate so that an
// idle node can ramp back up), within [min_w, nameplate_w]: water-filling on demand.
class ProportionalAllocator final : public Allocator {
 public:
  std::string name() const override { return "proportional"; }
  std::vector<double> split(double budget_w, const std::vector<NodeRecord>& nodes) const override;
};

// Per job, through src/allocation: each node's jobs become linear power->throughput curves
// (allocation::job_from_pfi) with P_max = the node's uncontrolled draw per GPU (if reported;
// within [1.05 x min_w, nameplate_w] per GPU), else its nameplate per GPU, x the job's GPUs,
// T_max proportional to its GPUs, a floor of max(its min_w, the node's min_w per GPU x its
// GPUs) and PFI = pfi, else 1 / elasticity, else 1; GPUs no job reports form one more job of
// PFI 1. Node watts = the sum of its jobs' watts. When the budget does not cover the jobs'
// floors, the split falls back to EqualAllocator (same contract as above).
//   kPfiScaled ("pfi"): curtailment proportional to P_max x PFI, so a more elastic job (and,
//     per watt, a bigger one) gives up more; kGreedy ("greedy"): the watts go where they buy
//     the most throughput, i.e. the highest-PFI jobs are cut first, down to their floors.
class JobAllocator final : public Allocator {
 public:
  JobAllocator(std::string name, allocation::Method method)
      : name_(std::move(name)), method_(method) {}
  std::string name() const override { return name_; }
  std::vector<double> split(double budget_w, const std::vector<NodeRecord>& nodes) const override;

 private:
  std::string name_;
  allocation::Method method_;
};

// The least concave function above a sampled curve ([[x, y], ...], x ascending), made monotone
// (non-decreasing) by holding its maximum: the same x, each y lifted to the envelope. A cap
// sweep measured on the simulator or in the field is noisy and need not be concave; the split's
// optimum lands on the points measured high (a bump draws budget to it, away from a job whose
// curve is truly steeper), so CurveAllocator splits on the envelopes. Fewer than 3 points: the
// running maximum only.
std::vector<std::pair<double, double>> upper_concave_envelope(
    const std::vector<std::pair<double, double>>& curve);

// A job of the site on its nodes' published curves (CurveAllocator): the live nodes whose first
// job record has the same id (a node without one is a job of its own). Its allocation::Job:
// power = node budget per GPU x the job's GPUs at each point of its first node's
// throughput_curve (every node of a job runs the same work), on the curve's
// upper_concave_envelope, throughput = weight x t_rel, weight
// = tier_min / sum(tier_min) over the jobs (1 / jobs when none has a tier: what the field
// demonstration scored, as `dr replay`), max_slowdown = 1 - hold_tier (the tier is a floor on the
// job's throughput under the cut; hold_tier = tier_min unless the round set a lower one from the
// job's progress, site_round.hpp; without a tier, 1). A node without a throughput curve: a job
// of its own, allocation::job_from_pfi(P_max = nameplate, PFI 1, floor min_w).
struct CurveJob {
  std::string id;
  std::vector<size_t> nodes;  // indices into the records
  int gpus = 0;
  double tier_min = 0;
  double hold_tier = 0;  // JobRecord::hold_tier of its first node when >= 0, else tier_min
  bool pausable = false;
  allocation::Job job;
  double floor_w = 0;       // sum of its nodes' min_w
  double tier_floor_w = 0;  // allocation::floor_w(job): the least budget that keeps its tier
};
std::vector<CurveJob> curve_jobs(const std::vector<NodeRecord>& nodes);

// The split of the site loop on the jobs' published curves (the coordinator's and `flexwatt dr
// replay`'s), the same code (src/allocation): "curves" (kOptimal), "curves-greedy" (kGreedy) and
// curves-METHOD for the other allocation methods over curve_jobs(); each node of a job gets the
// job's watts x its GPUs / the job's GPUs, within [min_w, nameplate_w]. When the tiers' floors do
// not fit the budget, the split again without tiers (the coordinator's site loop pauses a pausable
// job then, split_plan.hpp "pausing"); below the nodes' floors, EqualAllocator.
class CurveAllocator final : public Allocator {
 public:
  CurveAllocator(std::string name, allocation::Method method)
      : name_(std::move(name)), method_(method) {}
  std::string name() const override { return name_; }
  std::vector<double> split(double budget_w, const std::vector<NodeRecord>& nodes) const override;

 private:
  std::string name_;
  allocation::Method method_;
};

// "equal" | "proportional" | "pfi" | "greedy" | "curves" | "curves-METHOD" (METHOD any
// allocation::parse_method name: greedy, equal, proportional, pfi, pfi_scaled, optimal — the
// `dr replay --method` splits on the same curve jobs); InvalidArgument
// naming the choices otherwise.
Result<std::unique_ptr<Allocator>> make_allocator(std::string_view name);

}  // namespace fw::fleet

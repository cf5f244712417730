#pragma once
// Splitting a site power target across jobs (docs/sources.md §1b, Eq. 2;
// docs/flexibility.md).
//
// Pure functions, no simulator: a job is its measured power→throughput curve (or a PFI from which
// a linear curve is built), an SLA tier (maximum slowdown) and optionally its current draw.
// The power axis is the job's realized aggregate power (W); throughput is in one unit for every
// job (e.g. tokens/s), because methods compare and sum it across jobs.
//
// Methods (each returns per-job power targets with Σ power ≤ target when feasible):
//  - equal:        every job gives the same share of its P_max (the paper's equal weight,
//                  P_curtail ∝ P_max; the reference of the "gap");
//  - proportional: curtailment ∝ current draw (draw_w; equals `equal` when draw_w = P_max);
//  - pfi:          curtailment ∝ (P_max / T_max) · PFI (the paper's PFI-aware rule, Eq. 2);
//  - pfi_scaled:   curtailment ∝ P_max · (P_max / T_max) · PFI: the paper's rule per watt of
//                  P_max (the same split as `pfi` when every job has the same P_max; `pfi`
//                  itself gives a 64-GPU job and an 8-GPU job of the same kind the same watts);
//  - greedy:       remove power where the concave hull of the curve loses least throughput per
//                  watt (exact for concave curves);
//  - optimal:      the reference: the exact maximum of Σ throughput over the piecewise-linear
//                  curves, by branch and bound on their concave hulls (Falk–Soland). On concave
//                  curves the root relaxation is already exact (greedy's solution satisfies the
//                  KKT conditions of the separable concave program); on non-concave ones a job
//                  whose curve lies below its hull at the relaxed point has its domain split at
//                  a curve breakpoint. Exact unless the node limit (4000) is hit
//                  (Allocation::exact; then upper_bound is the hull bound).
// All methods respect the floors (SLA tier and the curve's lowest point) and ceilings (P_max):
// proportional-type rules are water-filled (a job at its floor passes its share to the others).
// If the floors alone exceed the target, the result is infeasible (feasible = false) and every
// job sits at its floor.
//
// Use (e.g. a coordinator): build one Job per job (curve from a sweep, or job_from_pfi), check
// it with validate(), then allocate(jobs, target_w, Method::kGreedy).power_w[i] is job i's
// power target (turn it into caps through the job's own cap→power sweep). Pure and reentrant
// (no state, no randomness, no clock). Cost for 100 jobs of 11 points (bench/allocation_bench):
// rules ≤ 0.05 ms, greedy ≤ 0.1 ms, optimal ≈ 0.15 ms on concave and ≈ 1 ms on non-concave curves.

#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::allocation {

struct CurvePoint {
  double power_w = 0;     // realized aggregate power of the job
  double throughput = 0;  // same unit for every job
};

struct Job {
  std::string name;
  std::vector<CurvePoint>
      curve;                  // power ascending, ≥ 2 points; the last is uncapped (P_max, T_max)
  double max_slowdown = 0.5;  // SLA tier: throughput ≥ (1 − max_slowdown) · T_max; 0..1
  double draw_w = 0;          // current draw (proportional); 0: P_max
  double pfi = 0;             // the PFI the `pfi` rule uses; 0: computed from the curve
};

// A job known only by its PFI: T/T_max = 1 − (1 − P/P_max)/PFI on [min_power_frac·P_max, P_max].
Job job_from_pfi(const std::string& name, double pmax_w, double tmax, double pfi,
                 double min_power_frac, double max_slowdown);

// all_methods() order: equal first, optimal last.
enum class Method { kEqual, kProportional, kPfi, kPfiScaled, kGreedy, kOptimal };
const std::vector<Method>& all_methods();
std::string method_name(Method m);
Result<Method> parse_method(const std::string& name);

struct Allocation {
  Method method = Method::kEqual;
  std::vector<double> power_w;     // per job, in input order
  std::vector<double> throughput;  // per job, on its curve
  double total_power_w = 0;
  double total_throughput = 0;
  bool feasible = true;    // the SLA floors fit under the target
  bool exact = true;       // optimal only: true when the result is provably optimal
  double upper_bound = 0;  // optimal only: concave-relaxation bound on any allocation's throughput
};

// Checks a job (curve ascending in power, positive values, slowdown in [0, 1]).
Status validate(const Job& j);

// Throughput on the piecewise-linear curve at power p (clamped to the curve's range).
double throughput_at(const Job& j, double power_w);
// PFI of the curve (the paper's Eq. 1 over the curve points; points within 0.5 % of T_max left
// out), or j.pfi when set.
double job_pfi(const Job& j);
// Lowest power meeting the SLA tier on the curve (≥ the curve's first point).
double floor_w(const Job& j);

// Splits target_w (site power, W) across jobs. Jobs must be valid (validate()).
Allocation allocate(const std::vector<Job>& jobs, double target_w, Method m);

// Share of the equal→optimal throughput gap closed by `a`: (a − equal)/(optimal − equal);
// NaN when the gap is below 1e-9 of the optimal throughput.
double gap_closed(const Allocation& a, const Allocation& equal, const Allocation& optimal);

}  // namespace fw::allocation

#pragma once
// Demand response in the loop (docs/flexibility.md): a scenario's jobs run on the simulator while
// the site target drops by `drop` of the jobs' summed uncapped draw for hold_s, with linear ramps.
// Each job's curve comes from a simulated cap sweep (power: a high quantile of the job's 30 s
// means at that cap, so that the split holds through training phases); every period_s the target is
// split by an allocation method and each job's share is turned into a per-GPU cap through its sweep
// (power → cap, linear between sweep points); a site feedback term lowers the split target by the
// integrated 30 s excess (negative: headroom given back). Reported per method: adherence (trailing
// 30 s means of site power at or below the trailing 30 s mean of the target + 1 %, over every
// sample of the event) and the throughput retained over the event span against the uncapped run.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/status.hpp"

namespace fw::studies {

struct DrOptions {
  std::string scenario_path;
  double start_s = 300, ramp_s = 120, hold_s = 600, drop = 0.30;
  double period_s = 5;  // allocation period
  // Site feedback per period on the 30 s excess over (1 − margin)·target; 0 (default): open loop,
  // which with the 95 % quantile mapping holds the target; feedback trades adherence for
  // throughput (docs/flexibility.md).
  double feedback_gain = 0.0;
  double feedback_margin = 0.05;  // the feedback holds the 30 s mean this share below the target
  double power_quantile = 0.95;   // job power at a cap: this quantile of its 30 s means (0: mean)
  double window_s = 30;
  uint64_t seed = 1;
};

struct DrMethodResult {
  std::string method;       // an allocation method, or "uncapped"
  double adherence = 0;     // share of event samples whose 30 s power mean ≤ target mean +1 %
  double worst_excess = 0;  // largest (30 s power mean / 30 s target mean − 1) in the event
  double power_used = 0;    // mean site power / mean target over the event
  double retained = 0;      // tokens over the event span / uncapped tokens over it
  std::vector<double> job_retained;
  bool feasible = true;
};
struct DrReport {
  DrOptions options;
  double baseline_w = 0;  // Σ jobs' uncapped mean draw (sweeps); the target drops below it
  std::vector<std::string> jobs;
  std::vector<double> job_pfi;
  std::vector<DrMethodResult> methods;
  std::vector<double> time_s;  // for the plot: every 5 s
  std::vector<double> target_w;
  std::vector<std::vector<double>> power_w;  // per method, trailing 30 s means
};

Result<DrReport> run_demand_response(const DrOptions& opt,
                                     const std::vector<allocation::Method>& methods);
nlohmann::json dr_json(const DrReport& r);
std::string dr_table(const DrReport& r);
std::string dr_svg(const DrReport& r);

}  // namespace fw::studies

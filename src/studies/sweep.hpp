#pragma once
// `flexwatt sweep`: a power-cap sweep of one job and its PFI (docs/sources.md §1b, Eq. 1),
// either simulated (a scenario's job, every GPU of the job capped at each cap in turn) or read
// from a measured sweep CSV (the public A100 format or job,cap_w,power_w,throughput; sim/fit.hpp).

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/status.hpp"

namespace fw::studies {

struct SweepRequest {
  // Exactly one of scenario_path / csv_path.
  std::string scenario_path;
  std::vector<std::string> overrides;  // --set key=value on the scenario
  int job = 0;                         // scenario job index
  std::vector<double> caps_w;  // empty: 6 caps from the device minimum to its maximum (H200: the
                               // paper's 200–700 W in 100 W steps)
  double warmup_s = 60, measure_s = 600;
  uint64_t seed = 1;
  std::string csv_path;
  std::string csv_job;  // empty: every job of the CSV
  // Scenario sweeps: called after each cap's simulated point with (done, total).
  std::function<void(size_t, size_t)> progress;
};

struct SweepRow {
  double cap_w = 0, power_w = 0, throughput = 0;
  double p_rel = 0, t_rel = 0;  // P/P_max, T/T_max
  double term = 0;              // (1 − P/P_max)/(1 − T/T_max); NaN when left out (T ≈ T_max)
};

struct SweepResult {
  std::string job, source;
  bool simulated = false;
  std::string throughput_unit;  // "tokens/s" (simulated) or "as measured"
  std::vector<SweepRow> rows;   // ascending cap; the last is the uncapped point
  double pfi = 0;
};

// Points with |1 − T/T_max| ≤ kPfiMinRelDrop are left out of the PFI as "T = T_max".
inline constexpr double kPfiMinRelDrop = 0.005;

Result<std::vector<SweepResult>> run_sweep(const SweepRequest& req);

// Rows and PFI of a sweep given as (cap, power, throughput) points.
Result<SweepResult> sweep_result(const std::string& job, const std::vector<SweepRow>& points);

// The sweep as an allocation curve (power ascending).
allocation::Job to_alloc_job(const SweepResult& r, double max_slowdown);

nlohmann::json sweep_json(const std::vector<SweepResult>& results);
std::string sweep_table(const std::vector<SweepResult>& results);
// T/T_max against P/P_max, one polyline per job, with the diagonal (PFI = 1).
std::string sweep_svg(const std::vector<SweepResult>& results);

}  // namespace fw::studies

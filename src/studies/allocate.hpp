#pragma once
// `flexwatt allocate`: reads jobs and a site power target (YAML or JSON) and splits the power
// with every method of allocation/allocation.hpp (docs/flexibility.md, input format).
//
//   target_w: 20000          # site target, W; or `cut: 0.3` (share of Σ P_max removed)
//   jobs:
//     - name: llama-pt
//       sla_pct: 25            # maximum slowdown, % (tiers 0/10/25/50; default 50)
//       curve: [[2000, 900], [3000, 1100], [5600, 1200]]   # [power_w, throughput]
//     - name: moe-ft
//       pmax_w: 5600           # PFI-only job: linear curve down to min_power_frac·pmax_w
//       tmax: 800
//       pfi: 2.1
//       min_power_frac: 0.35   # default 0.3
//       draw_w: 5000           # optional current draw (proportional)
//     - name: from-csv
//       sweep_csv: data/a100_power_cap_sweep.csv   # a measured sweep (path relative to the file)
//       sweep_job: pt_mpt_7b_lg                    # job in it; power per GPU × gpus
//       gpus: 8
//       throughput_scale: 1500                     # any job: multiplies its throughput (to
//                                                  # bring every job to one unit, e.g. tokens/s)

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/status.hpp"
#include "core/text_table.hpp"

namespace fw::studies {

struct AllocateInput {
  std::vector<allocation::Job> jobs;
  double target_w = 0;
};

// Errors name file:line: field.
Result<AllocateInput> load_allocate_input(const std::string& path);

struct AllocateReport {
  AllocateInput input;
  std::vector<allocation::Allocation> results;  // one per method, all_methods() order
};

AllocateReport run_allocate(const AllocateInput& in,
                            const std::vector<allocation::Method>& methods);

nlohmann::json allocate_json(const AllocateReport& r);
// Summary per method; with per_job, also each job's power and slowdown per method, within
// style.width columns unless style.wide (the columns left out named under it).
std::string allocate_table(const AllocateReport& r, bool per_job, const TextStyle& style = {});

}  // namespace fw::studies

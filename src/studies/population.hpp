#pragma once
// Population study of the allocation methods (docs/flexibility.md): populations of jobs drawn
// from the simulator's workload space, each cut by a share of its summed P_max, and per method
// the share of the equal→optimal throughput gap it closes (mean and 95 % CI over populations).
//
// Workload space (assumptions, stated in docs/flexibility.md): class dense/MoE × pretraining/
// fine-tuning (60 % PT), the class preset's fwd/bwd mix perturbed (SM activity, memory traffic,
// compute-bound share, share outside fwd/bwd), 8–64 GPUs, per-GPU token rate lognormal by class.
// Each job's curve is a simulated cap sweep of one GPU of the job (sim::simulate_sweep) × GPUs.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "allocation/allocation.hpp"
#include "core/status.hpp"
#include "core/text_table.hpp"
#include "sim/fit.hpp"

namespace fw::studies {

struct PopulationOptions {
  int populations = 500;
  int jobs = 100;
  std::vector<double> cuts{0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4};
  std::string gpu = "h200-sxm";
  bool sla_tiers = false;   // draw SLA tiers 0/10/25/50 % (else no SLA: the curve's range)
  int pool = 2000;          // distinct simulated jobs the populations draw from
  int fixed_gpus = 0;       // > 0: every job this many GPUs (else 8/16/32/64)
  double rate_sigma = 0.4;  // lognormal spread of per-GPU tokens/s within a class
  uint64_t seed = 1;
};

struct SimulatedJob {
  allocation::Job job;
  std::string cls;  // dense-pt, dense-ft, moe-pt, moe-ft
  int gpus = 8;
  double pfi = 0;   // of the simulated sweep (Eq. 1)
  sim::JobMix mix;  // the drawn fwd/bwd mix
};

// One job's shape drawn from the workload space: class, mix and a simulated sweep of one GPU
// (11 caps from the device's minimum to its maximum); power per GPU, throughput in iterations/s.
// Scaled to a job (GPUs, tokens per iteration) by scale_job. (a simulated sweep of 11 caps from the
// device's minimum
Result<SimulatedJob> draw_shape(std::mt19937_64& rng, const std::string& gpu);
// The PFIs of n shapes drawn in turn from one stream seeded `seed` (fleet-sim --pfi-gpu).
Result<std::vector<double>> draw_shape_pfis(uint64_t seed, int n, const std::string& gpu);
// The shape as a job: GPUs drawn from 8/16/32/64 (40/30/20/10 %), per-GPU tokens/s at full
// power lognormal around the class's rate (assumption), SLA tier drawn when sla_tiers.
allocation::Job scale_job(const SimulatedJob& shape, std::mt19937_64& rng,
                          const PopulationOptions& opt);

struct MethodAtCut {
  std::string method;
  double gap_mean = 0, gap_ci95 = 0;  // share of the equal→optimal gap closed
  double gain_per_job_mean = 0;       // throughput over equal, per job (tokens/s)
  double loss_mean = 0;               // throughput lost vs uncapped, share
  int populations = 0;                // with a gap (> 0) and feasible
};
struct PopulationCut {
  double cut = 0;
  std::vector<MethodAtCut> methods;
};
struct PopulationReport {
  PopulationOptions options;
  std::vector<PopulationCut> cuts;
  double mean_pfi = 0;
};

Result<PopulationReport> run_population(const PopulationOptions& opt);
nlohmann::json population_json(const PopulationReport& r);
// The gap-closed table, within style.width columns unless style.wide (the columns left out
// named under it).
std::string population_table(const PopulationReport& r, const TextStyle& style = {});
std::string population_svg(const PopulationReport& r);

}  // namespace fw::studies

#pragma once
// Fitting the simulator to a user's measurements ("Bring your own job", docs/simulator.md):
//
// 1. From a power-cap sweep (per cap: realized power and throughput of one job), fit the
//    job's workload mix (fwd/bwd SM activity, memory traffic, compute-bound share, share of
//    the iteration outside fwd/bwd) so that the simulated sweep reproduces the measured
//    P/P_max and T/T_max at every cap and the uncapped power per GPU.
// 2. From an uncapped power log (nvidia-smi CSV or flexwatt trace), fit the steady level,
//    the per-GPU spread and noise, and the periodic low phases (period, length, level).
//
// Both produce scenario YAML (pretraining-kind job with `mix`, `duty`, `hetero` blocks).
// Everything simulated here is simulated; the measured inputs are the user's.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/pfi.hpp"
#include "core/status.hpp"
#include "sim/cluster.hpp"
#include "sim/gpu_model.hpp"
#include "sim/workload.hpp"

namespace fw::sim {

// ---- Power-cap sweep -------------------------------------------------------------------
struct SweepPoint {
  double cap_w = 0;       // per-GPU cap
  double power_w = 0;     // realized power per GPU
  double throughput = 0;  // any unit (ratios are fitted)
};
struct MeasuredSweep {
  std::string job;
  std::vector<SweepPoint> points;  // cap ascending; the largest cap is the uncapped point
  int gpus = 1;  // the job's size: total / per-GPU power (A100 format), a `gpus` column, or 1
};

// Reads a sweep CSV. Formats (detected from the header):
//  - the public A100 sweep: Workload,GPU power cap,throughput,total GPU power,
//    normalized throughput,power per GPU;
//  - plain: job,cap_w,power_w,throughput[,gpus] (power per GPU, W; throughput in any unit).
// Every row is checked, whichever job it holds: a bad field, or a cap given twice for one job
// (naming the earlier line), is an error naming path:line: field. Every sweep returned has at
// least two caps. With only_job, only that job's sweep is returned (the rule of two caps is
// about the sweeps returned, so another job's single row is no error), or none when the file
// holds no rows for it: the caller names the job and the file.
Result<std::vector<MeasuredSweep>> read_sweep_csv(const std::string& path,
                                                  const std::string& only_job = "");

// The fitted knobs of a pretraining-kind job (scenario key `mix`).
struct JobMix {
  double sm = 1.0;             // fwd/bwd SM activity at f_max
  double mem = 0.6;            // fwd/bwd memory traffic at f_max
  double compute_bound = 0.8;  // fwd/bwd compute-bound share
  double comm_share = 0.12;    // share of the iteration outside fwd/bwd
};

// The pretraining model of `base` with `mix` applied (as the scenario's `mix` block does).
PretrainModel apply_mix(const PretrainModel& base, const JobMix& mix);

// Simulated sweep of one GPU running `model` (no jitter, duty cycle or heterogeneity):
// per cap, the mean power over whole iterations and iterations per second.
std::vector<PfiPoint> simulate_sweep(const GpuPreset& gpu, const PretrainModel& model,
                                     const std::vector<double>& caps_w, const SimParams& sim);

struct SweepFitRow {
  double cap_w = 0;
  double p_meas = 0, p_sim = 0;  // P / P_max
  double t_meas = 0, t_sim = 0;  // T / T_max
  double power_w_sim = 0;        // per GPU
};
struct SweepFit {
  std::string job;
  std::string base_workload;  // preset the mix was applied to
  JobMix mix;
  std::vector<SweepFitRow> rows;
  double pmax_meas_w = 0, pmax_sim_w = 0;
  double pfi_meas = 0, pfi_sim = 0;
  double max_dp = 0, max_dt = 0;      // largest |residual| of P/P_max and T/T_max
  bool power_at_or_below_cap = true;  // simulated power ≤ cap at every cap ≥ device min
  int evaluations = 0;
  int gpus = 1;  // the sweep's job size (the scenario's)
  // Parameters held at a search limit (which and why), and what came from where.
  std::vector<std::string> warnings, notes;
};

// Fits `m` on `gpu`, starting from preset `base_workload` (a pretrain preset name).
Result<SweepFit> fit_sweep(const MeasuredSweep& m, const GpuPreset& gpu,
                           const std::string& base_workload, const SimParams& sim);

// Scenario YAML for a fitted job: `gpus` GPUs (the sweep's job size) without per-GPU spread or
// noise (the fit's conditions; a sweep does not measure them), budget = the measured uncapped
// power of the job.
std::string sweep_fit_yaml(const SweepFit& f, const GpuPreset& gpu, int gpus);

// --check on a sweep: the written scenario re-run at every measured cap (all GPUs capped), at
// its job size: P/P_max and T/T_max against the measured ones.
struct SweepCheck {
  int gpus = 0;
  std::vector<SweepFitRow> rows;  // power_w_sim: per GPU
  double max_dp = 0, max_dt = 0;
};
Result<SweepCheck> check_sweep_fit(const SweepFit& f, const std::string& yaml, uint64_t seed);
nlohmann::json sweep_check_json(const SweepCheck& c);
std::string sweep_check_table(const SweepCheck& c);

// ---- Uncapped power log ----------------------------------------------------------------
// A power log as per-GPU series on a common time grid (one column per GPU).
struct PowerLog {
  double dt_s = 0.5;
  std::vector<std::vector<double>> gpu_w;     // [gpu][sample]
  std::vector<std::vector<double>> mem_util;  // [gpu][sample], 0..1, NaN: none; empty: no column
};
// Reads a flexwatt trace (directory or gpus.csv) or an nvidia-smi CSV log, resampled onto a
// grid of dt_s (mean of the samples in each cell; an empty cell repeats the previous value).
Result<PowerLog> read_power_log(const std::string& path, double dt_s);

struct TraceFit {
  int gpus = 0;
  size_t first_sample = 0, samples = 0;  // the fitted span (first to last training) of the log
  double duration_s = 0;
  double high_w = 0, low_w = 0;              // per GPU: training level, regular pauses' level
  double threshold_w = 0;                    // per GPU: below it (smoothed) a sample is low
  double every_s = 0, length_s = 0;          // regular pauses: lognormal medians (0: none)
  double jitter = 0.1, length_jitter = 0.1;  // lognormal sigmas of spacing and length
  int low_phases = 0;                        // regular pauses found
  int long_phases = 0;                       // rare long pauses found (twin: checkpoints)
  double long_every_s = 0, long_s = 0, long_w = 0;  // their training spacing, length, level
  int checkpoint_every_iters = 0;
  double low_share = 0;  // share of the span in pauses (regular and long)
  double offset_sd_frac = 0, noise_sd_frac = 0, noise_tau_s = 1.0;
  double period_s = 0, acf_at_period = 0;  // measured in training (0: no period)
  double iter_s = 1.2, iter_jitter = 0.01, tokens_per_iter = 4096.0 * 256;
  double budget_w = 0;  // node budget written to the scenario
  std::string budget_reason;
  JobMix mix;
  std::string base_workload;
  double duty_sm = 0.05, duty_mem = 0.10;
  // What the fit could not represent, or where it held a parameter at a limit (each says which
  // and why), and what it decided (lead-in, populations, parameters from the preset).
  std::vector<std::string> warnings, notes;
};
// Fits a log taken on `gpu` (no cap binding), base preset `base_workload`. Errors
// (InvalidArgument) when the log's training level is beyond what `gpu` reaches with the preset.
Result<TraceFit> fit_trace(const PowerLog& log, const GpuPreset& gpu,
                           const std::string& base_workload, const SimParams& sim);
std::string trace_fit_yaml(const TraceFit& f, const GpuPreset& gpu, const std::string& name);

// Summary statistics of a node power series (sum over GPUs) for --check.
struct LogStats {
  double mean_w = 0;       // node mean
  double peak30_w = 0;     // largest trailing 30 s mean
  double share_above = 0;  // share of trailing 30 s means (one per sample) above level_w
  double level_w = 0;
};
LogStats log_stats(const PowerLog& log, double level_w);
// Median of the node's trailing 30 s means (the default level of --check).
double median_window30_w(const PowerLog& log);

// The part of `log` from sample `first`, n samples long.
PowerLog slice_log(const PowerLog& log, size_t first, size_t n);

// ---- Reports (fit_report.cpp) ----------------------------------------------------------
// --check: re-simulates the fitted scenario `yaml` (seeds seed, seed+1, …; statistics averaged
// over them) over the fitted span of `log` and compares node statistics at level_w (≤ 0: the
// measured median of trailing 30 s means).
struct TraceCheck {
  LogStats measured, simulated;
};
Result<TraceCheck> check_trace_fit(const PowerLog& log, const TraceFit& f, const std::string& yaml,
                                   double level_w, uint64_t seed, int seeds = 3);
nlohmann::json sweep_fit_json(const SweepFit& f);
std::string sweep_fit_table(const SweepFit& f);    // measured vs simulated per cap
nlohmann::json trace_fit_json(const TraceFit& f);  // the fitted figures, warnings and notes
nlohmann::json trace_check_json(const TraceCheck& c);
std::string trace_check_table(const TraceCheck& c);

// ---- Fit report (fit_report.cpp): the twin against the log, each figure with its error ----
// Node power (sum over GPUs) over the fitted span; the twin is the written scenario re-run
// over as many samples (seeds seed, seed+1, …; figures averaged over them). Rows: mean, p5,
// p50, p95, low-phase share, pause spacing, shares of trailing 1 s / 5 s / 30 s means above two
// budgets (the log's p90 and p99 of 1 s means, or level_w > 0 and the p99), peak 30 s mean,
// autocorrelation at the step time (1 s without a period), and the dominant period when the
// log has one. Each row: its error (relative or absolute) and a verdict against two
// tolerances (good / usable / not reliable); the report's verdict is the worst row's (at best
// "usable" when the fit warned), with the reason.
struct ReportRow {
  std::string name;   // key, e.g. "mean_w", "viol_5s_at_b1"
  std::string label;  // for the table
  std::string unit;   // "W", "s", "" (a share or a correlation)
  double log = 0, twin = 0, error = 0;
  bool relative = true;         // error = twin/log − 1, else twin − log
  double good = 0, usable = 0;  // tolerances on |error|
  std::string verdict;
};
struct FitReport {
  std::vector<double> budgets_w;
  std::vector<ReportRow> rows;
  std::string verdict, reason;
  int seeds = 0;
};
Result<FitReport> report_trace_fit(const PowerLog& log, const TraceFit& f, const std::string& yaml,
                                   double level_w, uint64_t seed, int seeds = 3);
nlohmann::json fit_report_json(const FitReport& r);
std::string fit_report_table(const FitReport& r);

}  // namespace fw::sim

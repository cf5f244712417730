#pragma once
// Site power of one synchronous training job across a whole site (issue #48; docs/
// stabilization.md): iteration-scale swings, periodic checkpoints, a synchronous start and stop,
// at a 10 ms step, written as a site meter would record it (mean power per output period,
// 50 ms by default: 20 Hz). Everything here is simulated.
//
// The job: the pretraining workload presets of sim/workload.hpp (forward, backward, all-to-all,
// all-reduce, optimizer: shares of iter_s and loads), on the GPU power model of
// sim/gpu_model.hpp (power P(load, x), the firmware's cap enforcement with its lags), with
// checkpoints every N iterations. A rank is one tensor-parallel group (tp GPUs in lockstep); the
// ranks are independent between gradient all-reduces and meet at each one:
//   forward → backward → [all-to-all] → wait → all-reduce → [checkpoint] → optimizer → forward
// The forward/backward/all-to-all work of each rank and iteration is multiplied by a lognormal
// draw (median 1, log-space sigma iter_jitter: the straggler model; the existing preset key).
// A rank that finishes early waits at load 0 (a CUDA context at idle: the blocking power
// measured on A100 is the context-idle power, docs/simulator.md). The all-reduce starts when the
// slowest rank of the whole site arrives and lasts iter_s × share (communication bound: the
// clock's effect on it is left out); the checkpoint is a global pause of checkpoint_s at
// checkpoint_load. The optimizer is rank-local.
//
// Aggregation (what keeps a 16,384-GPU site fast): `representatives` ranks are simulated, each
// standing for ranks/representatives ranks with identical behaviour (their power scaled by the
// GPUs they stand for). The all-reduce waits for the slowest of *all* ranks: besides the
// representatives, one more rank with no power (the "critical rank") draws, every iteration,
// the largest of the other ranks' jitter draws exactly (the order statistic: u^(1/n) pushed
// through the inverse normal CDF). With representatives = ranks nothing is aggregated (the
// reference of the equivalence test). Staggered starts and stops give each representative a
// slot in which the GPUs it stands for join (leave) one by one: its contribution moves linearly
// across the slot.
//
// Deterministic for a seed (streams "site.rank" with one child per rank, "site.critical").
// Not thread-safe; distinct simulators may run on distinct threads.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "core/status.hpp"
#include "sim/gpu_model.hpp"
#include "sim/site_mitigation.hpp"
#include "sim/workload.hpp"
#include "vocab/snapshot.hpp"

namespace fw::sim {

struct SiteJob {
  std::string workload = "dense-pt";  // pretrain preset (find_pretrain_model)
  PretrainModel model;                // its phases (filled from the preset)
  int tp = 8;                         // GPUs per rank (lockstep)
  double tokens_per_iter = 4.0e6;     // whole job
  double iter_jitter = 0.01;          // log-space sigma per rank and iteration
  int checkpoint_every_iters = 0;     // 0: none
  double checkpoint_s = 20;
  PhaseLoad checkpoint_load{0.05, 0.10, 0.0};  // as the scenario default (I/O bound)
  double start_s = 10;                         // the job's processes start (contexts, training)
  double end_s = std::numeric_limits<double>::infinity();  // they exit
};

struct SiteSpec {
  std::string name, description, path;
  std::string gpu_model;  // catalogue/preset name of the power model
  const GpuPreset* gpu = nullptr;
  // The GPU model whose power smoothing the GPUs have (sim/site_smoothing.hpp); empty: none.
  std::string smoothing_model;
  const SmoothingCapability* smoothing = nullptr;
  int64_t gpus = 1024;       // multiple of job.tp
  int representatives = 64;  // ranks simulated, 1..ranks
  double duration_s = 300;
  double dt_s = 0.01;             // integration step
  double output_period_s = 0.05;  // the meter's period, a whole number of steps
  FirmwareParams firmware;
  SiteJob job;
  SiteFillCost fill_cost;

  int64_t ranks() const { return gpus / job.tp; }
  double gpus_per_representative() const { return static_cast<double>(gpus) / representatives; }
};

// InvalidArgument naming the field when the spec or the mitigations cannot run (smoothing on a
// GPU without it, fractions out of range, a stagger longer than the job's run, ...).
Status validate(const SiteSpec& s);
Status validate(const SiteSpec& s, const SiteMitigations& m);

// What one run gives. Sample k of the trace is the mean site power over [k·p, (k+1)·p), timed
// at (k + 1)·p (a meter reports at the end of its period).
struct SiteRun {
  double output_period_s = 0;
  std::vector<double> time_s, power_w;
  double energy_j = 0;                  // Σ power · p over the trace
  double natural_energy_j = 0;          // what the work itself drew (no burn of any kind)
  double smoothing_burn_j = 0;          // drawn by smoothing above the work and fill
  double fill_j = 0;                    // the fill workload during training and checkpoints
  double stagger_burn_j = 0;            // the burn while GPUs join and leave (stagger)
  int64_t iterations = 0;               // all-reduces completed while the job trained
  std::vector<double> iteration_end_s;  // when each of them completed
  double tokens = 0;
  double train_start_s = 0, train_end_s = 0;
  double nameplate_w = 0;  // gpus × TDP
  int64_t steps = 0;       // integration steps × simulated ranks (work done, for speed figures)
};

// Per-rank view, for a plant over the simulator (sim/site_plant.hpp). Per GPU of the rank.
struct SiteRankReading {
  double energy_j = 0;  // cumulative, per GPU
  double power_w = 0;   // last step, per GPU
  double cap_w = 0;
  double clock_ratio = 1;
  Load load;  // last step, time-weighted
  Phase phase = Phase::kIdle;
};

class SiteSimulator {
 public:
  // REQUIRES: validate(spec, m) ok.
  SiteSimulator(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed);

  // Runs whole steps up to t_s (clamped to duration_s).
  void advance_to(double t_s);
  double time_s() const { return static_cast<double>(step_) * spec_.dt_s; }
  bool done() const { return step_ >= total_steps_; }

  int representatives() const { return spec_.representatives; }
  double gpus_per_representative() const { return spec_.gpus_per_representative(); }
  SiteRankReading reading(int rank) const;
  // Sets representative `rank`'s cap (clamped to the device range); the critical rank follows
  // the lowest representative cap. Takes effect at the next step.
  void set_cap_w(int rank, double cap_w);
  int64_t iterations() const { return iterations_; }
  double tokens() const { return static_cast<double>(iterations_) * spec_.job.tokens_per_iter; }

  // Representative `rank`'s power smoothing and fill from the next step on (the plant checks
  // them against the site: validate(spec, m)'s rules). The critical rank follows
  // representative 0's. The smoothing's envelope state carries over.
  void set_smoothing(int rank, const SmoothingSettings& s);
  void set_fill(int rank, const FillSettings& f);
  const SmoothingSettings& smoothing(int rank) const {
    return ranks_[static_cast<size_t>(rank)].smoothing;
  }
  const FillSettings& fill(int rank) const { return ranks_[static_cast<size_t>(rank)].fill; }
  // The job's announcement: the next checkpoint follows the all-reduce of this many more
  // iterations (1: the one under way); 0 when the job does not checkpoint.
  int64_t iterations_to_checkpoint() const;
  const SiteSpec& spec() const { return spec_; }
  double train_start_s() const { return train_start_s_; }
  double train_end_s() const { return train_end_s_; }

  // The run so far (call after advance_to(duration)); moves the trace out.
  SiteRun finish();

 private:
  enum class Seg : uint8_t { kFwd, kBwd, kA2a, kWait, kAllReduce, kCheckpoint, kOpt };
  struct Rank {
    double weight = 0;  // GPUs it stands for; 0: the critical rank
    double cap_w = 0;
    Seg seg = Seg::kFwd;
    double left = 0;  // f_max-seconds (fwd/bwd/a2a/opt) or seconds (all-reduce, checkpoint)
    double mult = 1;  // this iteration's jitter draw (forward, backward, all-to-all)
    double wait_from_s = 0, wait_power_w = 0;
    FirmwareState fw;
    Load last;
    SmoothingState sm;
    SmoothingSettings smoothing;  // this rank's settings (SiteMitigations', or written)
    FillSettings fill;
    bool fill_active = false;
    double power_w = 0, energy_j = 0;
    Rng rng;
  };
  struct Piece {  // what a rank's work drew over part of a step
    double energy_j = 0, u_s = 0, m_s = 0, c_s = 0;
  };
  void step();
  void begin_iteration(Rank& r);
  double draw_multiplier(Rank& r, bool critical);
  void advance_rank(Rank& r, double t0, double t1, double x_eff, double ceiling_w, double rate,
                    Piece& acc);
  void next_after_collective(Rank& r);
  Load seg_load(Seg s) const;
  double burn_level_w(const Rank& r) const;
  double work_rate(const Rank& r) const;  // the fill's slowdown on the training work

  SiteSpec spec_;
  SiteMitigations m_;
  FirmwareCoeffs k_;
  std::vector<Rank> ranks_;  // representatives, then the critical rank (when aggregated)
  int64_t step_ = 0, total_steps_ = 0;
  int steps_per_sample_ = 5;
  double train_start_s_ = 0, train_end_s_ = 0;
  int64_t others_ = 0;  // ranks the critical rank's draw is the maximum of
  int64_t iterations_ = 0;
  bool ckpt_pending_ = false;
  double sample_acc_w_ = 0;
  double burn_w_ = 0;        // stagger burn level per GPU
  std::vector<Piece> accs_;  // per rank, this step
  SiteRun run_;
  Rng critical_rng_;
};

// Builds, runs to duration_s and finishes. REQUIRES: validate(spec, m) ok.
SiteRun simulate_site(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed);

// The job's mean training power per GPU at cap cap_w, at steady clocks (share-weighted phase
// powers, no waits): the stagger's burn level.
double mean_training_power_w(const SiteSpec& spec, double cap_w);

// The inverse of the standard normal CDF at 1 − q_upper (q_upper in (0, 1)), accurate in the
// upper tail (Acklam's rational approximation, relative error < 1.2e-9). Exposed for tests.
double normal_upper_quantile(double q_upper);

}  // namespace fw::sim

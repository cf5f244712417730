#pragma once
// Simulated LLM workloads: GRPO (rollout generation, scoring, policy update, weight sync)
// and pretraining / fine-tuning iterations (dense or MoE). A job's GPUs move in lockstep:
// the job advances at the pace of its slowest GPU's SM clock and puts the same Load on
// every one of its GPUs. Work is measured in "f_max-seconds": the time a phase would take
// at the maximum SM clock; a phase with compute-bound share c runs at rate s(c, x).
//
// Every constant names its source (docs/sources.md) or says it is an assumption.
// See docs/simulator.md for the equations.

#include <array>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.hpp"
#include "sim/gpu_model.hpp"
#include "sim/pipeline_job.hpp"
#include "vocab/snapshot.hpp"

namespace fw::sim {

enum class JobKind { kGrpo, kPretrain, kPipeline };

// Load of one phase of work on each GPU of a job: the GPU model's Load (one type for both).
using PhaseLoad = Load;

// GRPO model constants, per GPU at the preset's tensor-parallel degree.
struct GrpoModel {
  std::string_view name;
  int tp_nominal = 1;
  double weights_gb = 0;          // bf16 weights, whole model
  double kv_bytes_per_token = 0;  // whole model (all layers, K and V)
  double trainer_reserve_gb = 0;  // memory held by the co-located trainer (assumption)
  // Decode: iteration time t_it(B) = it_base_s + it_per_seq_s·B (f_max-seconds).
  double it_base_s = 0, it_per_seq_s = 0;
  // Decode load: u(B) = u0 + u1·sat(B), m(B) = m0 + m1·sat(B), compute share c.
  double dec_u0 = 0, dec_u1 = 0, dec_m0 = 0, dec_m1 = 0, dec_b_half = 1, dec_c = 0;
  // Saturation shape: B^h/(B^h + b½^h); h = 1 above, 2 for a sharper knee (7B: light at a
  // 16-sequence tail, near 290 W at 50+ sequences).
  double dec_hill = 1;
  double prefill_tok_per_s = 0;  // prompt tokens per f_max-second
  PhaseLoad prefill;
  double score_tok_per_s = 0;  // scoring (reference/reward forward), all tokens
  PhaseLoad score;
  double update_s_per_token = 0;  // fwd+bwd f_max-seconds per token at saturation
  double update_sat_tokens = 0;   // micro-batch tokens that saturate the GPU
  PhaseLoad update;               // at saturation; scaled by occupancy below it
  double optim_s = 0;
  PhaseLoad optim;
  double sync_s = 0;
  PhaseLoad sync;
};
const GrpoModel* find_grpo_model(std::string_view name);
const char* grpo_model_names();

// Pretraining / fine-tuning workload shape, per GPU.
struct PretrainModel {
  std::string_view name;
  bool moe = false;
  double iter_s = 1.0;  // iteration time at f_max, f_max-seconds
  // Shares of iter_s and loads of: forward, backward, all-to-all (MoE), all-reduce, optimizer.
  std::array<double, 5> share{};
  std::array<PhaseLoad, 5> load{};
};
const PretrainModel* find_pretrain_model(std::string_view name);
const char* pretrain_model_names();

struct GrpoParams {
  const GrpoModel* model = nullptr;
  int tp = 1;
  int prompts_per_step = 2;
  double prompt_tokens = 200;
  double completion_median_tokens = 170;
  double completion_sigma = 0.8;  // log-space sigma (long tail)
  double completion_max_tokens = 1024;
  int micro_batch_seqs = 8;
  int kv_capacity_seqs = 0;  // derived at load time
  // Rollout generation only: after the last sequence of a step finishes, the next step's
  // generation begins at once (no scoring, update or weight sync). Models the research's
  // generation-only proxy: its 72B sweeps and the occupancy controller's live validation ran
  // rollout generation only ("validated on a generation proxy (99.9% of time)", "Sweeps used
  // AWQ-72B as a generation-only proxy"; docs/sources.md §1a [2nd]). Default false.
  bool generation_only = false;
  // Non-stationary completion lengths (scenario key completion_len_curve; docs/simulator.md
  // "Completion-length drift"): points (t_s, factor), t_s strictly increasing, factor > 0.
  // A sequence admitted at trace time t draws its length with the median multiplied by the
  // curve's piecewise-linear value at t + curve_shift_s (held at the end values outside the
  // points; the clip at completion_max_tokens stays). Empty (the default): no drift.
  std::vector<std::array<double, 2>> completion_len_curve;
  // Trace time the job's curve starts at: a plant built "as at time t0" (a recalibration's
  // calibration runs on the workload as it is then) has curve_shift_s = t0. Default 0. It
  // shifts the stragglers and pauses below as well.
  double curve_shift_s = 0;
  // Stragglers (scenario key `stragglers`: [{factor, start_s, end_s}, ...]; docs/simulator.md
  // "Stragglers and phase-mix pauses (GRPO)"): while start_s <= t < end_s (the job's time, as
  // the curve's) one GPU or node of the job is `factor` (> 1) times slower; the job moves in
  // lockstep, so its work advances at 1/factor of its rate and its GPUs spend the rest of the
  // time waiting with no activity (load 0 for that share). Overlapping stragglers multiply.
  struct Straggler {
    double factor = 1, start_s = 0, end_s = 0;
  };
  std::vector<Straggler> stragglers;
  // Phase-mix pauses (scenario key `pauses`: [{start_s, end_s, every_s, length_s, sm, mem},
  // ...]): within [start_s, end_s) of the job's time, after every every_s of work a pause of
  // length_s (the pattern restarts at start_s: paused when (t − start_s) mod (every_s +
  // length_s) >= every_s) at load {sm, mem, compute share 0}: evaluation, checkpoint or
  // data-loader stall; the job makes no progress in it (its state is held). The first pause
  // in force wins; pauses take precedence over stragglers.
  struct Pause {
    double start_s = 0, end_s = 0, every_s = 0, length_s = 0;
    PhaseLoad load{0.0, 0.08, 0.0};
  };
  std::vector<Pause> pauses;
};

// The completion-length factor at trace time t_s (1 without a curve).
double completion_len_factor(const GrpoParams& p, double t_s);
// The pause in force at job time t_s (curve_shift_s added), or nullptr.
const GrpoParams::Pause* grpo_pause_at(const GrpoParams& p, double t_s);
// The product of the stragglers' factors in force at job time t_s (curve_shift_s added); 1
// without one.
double grpo_straggler_factor(const GrpoParams& p, double t_s);

struct PretrainParams {
  PretrainModel model;
  int tp = 8;
  double tokens_per_iter = 0;      // trained tokens per iteration (whole job)
  double iter_jitter = 0.01;       // log-space sigma of the compute phases (assumption)
  int checkpoint_every_iters = 0;  // 0: none
  double checkpoint_s = 0;
  PhaseLoad checkpoint_load;
  double stall_prob = 0;  // per iteration
  double stall_mean_s = 0;
};

// ---- Realism keys of a job (scenario blocks `hetero`, `duty`; docs/simulator.md) ----------
// Per-GPU heterogeneity, drawn per run seed (stream sim.hetero, one child per GPU).
struct Heterogeneity {
  double offset_sd_frac = 0;  // static power offset per GPU, sd as a fraction of TDP
  double noise_sd_w = 0;      // independent power noise per GPU (AR(1) process), sd in W
  double noise_tau_s = 2;     // its correlation time
  double imbalance = 0;       // GPU k carries 1 − imbalance·U_k of the busiest GPU's load
  // Scheduled workload change (a repartition of pipeline stages or experts): at change_at_s
  // (> 0; 0: never) every GPU's work share is drawn again with imbalance_after (stream
  // sim.hetero.change). Offsets and noise are kept.
  double change_at_s = 0;
  double imbalance_after = 0;
};
// Periodic low-power phases (evaluation, checkpoint, data-loader stalls) of a pretraining or
// fine-tuning job: after about every_s of training, a phase of about length_s at `load`.
// Period and length jitter lognormally (sigmas jitter and length_jitter). every_s = 0: none.
struct DutyCycle {
  double every_s = 0;
  double length_s = 0;
  double jitter = 0.1;
  double length_jitter = 0.1;
  PhaseLoad load{0.0, 0.08, 0.0};
};

struct JobSpec {
  std::string name;
  JobKind kind = JobKind::kGrpo;
  std::string preset;  // model / workload preset name
  std::vector<int> gpus;
  double start_s = 0;  // the job (and its CUDA contexts) starts here
  // The job leaves here (its process exits: its GPUs idle without a CUDA context, its
  // counters stop); infinity: it runs to the end of the trace. end_s > start_s.
  double end_s = std::numeric_limits<double>::infinity();
  // Phase offset: at start_s the job is already start_offset_s into its run (it was run
  // alone, unthrottled, for that long before the trace begins; its progress counters
  // restart at 0). Set per job or by the scenario's fleet.start strategy (fleet_start.hpp).
  double start_offset_s = 0;
  GrpoParams grpo;
  PretrainParams pretrain;
  Heterogeneity hetero;
  DutyCycle duty;  // pretrain only
  // kPipeline (sim/pipeline_scenario.hpp): one GPU per stage of each data-parallel pipeline,
  // gpus[p · stages + s]; spec.tp = 1. tokens_per_iter: trained tokens per iteration (whole job).
  PipelineJobSpec pipeline;
  double pipeline_tokens_per_iter = 0;
  std::string pipeline_profile;  // the stage-profile file its work came from ("" = stage_work)
  // Knobs, indexed by the actuator table's per-job rows (vocab/actuator_table.hpp):
  // the configured setting (scenario key: the row's name) and the settable range (the row's
  // range keys); the table's defaults until a scenario sets them. Only the knobs the job's
  // kind responds to (responds_to_knob()) are read.
  KnobValues knobs = knob_defaults(&KnobKeys::value);
  KnobValues knob_min = knob_defaults(&KnobKeys::min);
  KnobValues knob_max = knob_defaults(&KnobKeys::max);
};

// Whether a job of `kind` responds to knob q (a per-job row of the actuator table): a GRPO job
// to gen_concurrency (applies at once to admission: running sequences are never preempted) and
// group_size (applies from the next step); a pretraining job to none. The workload's response
// to each knob is in workload.cpp.
bool responds_to_knob(JobKind kind, int q);

// A simulated job's mutable state; a value type (copying it clones the job, random stream
// included). The agent's record of a registered job is agent::RegisteredJob.
struct WorkloadState {
  Phase phase = Phase::kIdle;
  bool started = false;
  double tokens_total = 0;
  double steps_total = 0;
  Rng rng;
  // The knobs as last written (indexed by the actuator table; NaN: not set yet, start_job()
  // takes the spec's).
  KnobValues knobs = kNoKnobs;
  // GRPO
  int group_size = 0;  // in force for the current step (the knob applies from the next one)
  int seqs_total = 0, seqs_admitted = 0, seqs_done = 0;
  double decode_iter = 0;           // decode iterations done this step
  std::vector<double> finish_heap;  // min-heap of finish iterations of active sequences
  double prefill_left_s = 0;        // queued prefill work, f_max-seconds
  double step_tokens = 0;           // prompt + completion tokens of this step's sequences
  double work_left_s = 0;           // remaining f_max-seconds of the current phase
  PhaseLoad cur_load;               // load of the current work phase
  int sub_phase = 0;  // pretrain: index into the phase list; GRPO update: 0 fwd/bwd, 1 optim
  double iters_since_ckpt = 0;
  double train_since_duty_s = 0;  // time trained since the last duty-cycle low phase
  double next_duty_s = 0;         // training time at which the next one begins
  // Trace time since the job started (after its offset); advance_job() adds dt_s, the
  // cluster sets it from its clock each step. Read by the completion-length curve.
  double run_s = 0;
};

// Starts the job (at its start time), then advances it alone at full clock by
// spec.start_offset_s in steps of dt_s and zeroes its progress counters (phase offset).
void start_job(const JobSpec& spec, WorkloadState& st, double dt_s = 0.1);
// Advances the job by dt_s at clock ratio x (slowest GPU); returns the time-weighted load.
Load advance_job(const JobSpec& spec, WorkloadState& st, double dt_s, double x);
// KV-cache capacity in sequences per replica from model size, TP degree and GPU memory.
int kv_capacity_seqs(const GrpoParams& p, double hbm_gb);

}  // namespace fw::sim

#include "sim/workload.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace fw::sim {
namespace {

constexpr int kGenConcurrency = static_cast<int>(Knob::kGenConcurrency);
constexpr int kGroupSize = static_cast<int>(Knob::kGroupSize);

// GRPO model presets, per GPU at tp_nominal on A100-SXM4-80GB. Architecture facts
// (weights, KV bytes/token = 2·layers·kv_heads·head_dim·2 B) are from the public Qwen2.5
// model configurations (assumption: quoted from memory, not from docs/sources.md). The
// timing and load constants are assumptions fitted to docs/sources.md §1a (7B: ~3.5k tokens
// per ~55 s step, mean ≈ 230 W; 72B: per-device mean ≈ 147 W; concurrency authority
// 17–22 %) and §2.4 (A100 decode 280–305 W at saturation, prefill spikes 440–520 W).
constexpr GrpoModel kGrpoModels[] = {
    {
        .name = "qwen2.5-7b",
        .tp_nominal = 1,
        .weights_gb = 15.2,
        .kv_bytes_per_token = 2.0 * 28 * 4 * 128 * 2,
        .trainer_reserve_gb = 30,
        // Recalibrated to the published uncontrolled 500-step trajectory (§1a [2nd]: mean
        // ≈230 W, ~55 s and ~3.5k tokens per step, 216/500 steps over 314.6 W) with steps
        // violating as defined in analysis/steps_violating.hpp: low-occupancy decode is light
        // (Hill shape, b½ 32: a 16-sequence step runs near 110–160 W), the update is long and
        // heavy (~22 s at ~350 W). Decode at saturation stays at 280–305 W (§2.4).
        .it_base_s = 0.036,
        .it_per_seq_s = 0.0005,
        .dec_u0 = 0.09,
        .dec_u1 = 0.53,
        .dec_m0 = 0.18,
        .dec_m1 = 0.90,
        .dec_b_half = 32,
        .dec_c = 0.15,
        .dec_hill = 2,
        .prefill_tok_per_s = 8000,
        .prefill = {1.35, 0.45, 0.9},
        .score_tok_per_s = 6000,
        .score = {1.10, 0.50, 0.85},
        .update_s_per_token = 0.00315,
        .update_sat_tokens = 3000,
        .update = {0.90, 0.50, 0.80},
        .optim_s = 1.5,
        .optim = {0.30, 0.90, 0.20},
        .sync_s = 2.0,
        .sync = {0.05, 0.15, 0.0},
    },
    {
        .name = "qwen2.5-14b",
        .tp_nominal = 2,
        .weights_gb = 29.5,
        .kv_bytes_per_token = 2.0 * 48 * 8 * 128 * 2,
        .trainer_reserve_gb = 30,
        .it_base_s = 0.060,
        .it_per_seq_s = 0.0008,
        .dec_u0 = 0.15,
        .dec_u1 = 0.35,
        .dec_m0 = 0.40,
        .dec_m1 = 0.40,
        .dec_b_half = 12,
        .dec_c = 0.15,
        .prefill_tok_per_s = 6000,
        .prefill = {1.25, 0.45, 0.85},
        .score_tok_per_s = 4500,
        .score = {1.00, 0.50, 0.80},
        .update_s_per_token = 1.0 / 450,
        .update_sat_tokens = 2500,
        .update = {0.95, 0.50, 0.75},
        .optim_s = 2.0,
        .optim = {0.30, 0.85, 0.20},
        .sync_s = 3.0,
        .sync = {0.05, 0.15, 0.0},
    },
    {
        .name = "qwen2.5-72b",
        .tp_nominal = 4,
        .weights_gb = 145.4,
        .kv_bytes_per_token = 2.0 * 80 * 8 * 128 * 2,
        .trainer_reserve_gb = 33.9,
        .it_base_s = 0.070,
        .it_per_seq_s = 0.0020,
        .dec_u0 = 0.08,
        .dec_u1 = 0.15,
        .dec_m0 = 0.28,
        .dec_m1 = 0.20,
        .dec_b_half = 8,
        .dec_c = 0.10,
        .prefill_tok_per_s = 2500,
        .prefill = {1.10, 0.40, 0.80},
        .score_tok_per_s = 2000,
        .score = {0.70, 0.40, 0.75},
        .update_s_per_token = 1.0 / 600,
        .update_sat_tokens = 1000,
        .update = {0.55, 0.40, 0.70},
        .optim_s = 3.0,
        .optim = {0.25, 0.80, 0.20},
        .sync_s = 6.0,
        .sync = {0.05, 0.15, 0.0},
    },
};

// Pretraining / fine-tuning shapes: shares of the iteration and loads of forward, backward,
// all-to-all, all-reduce, optimizer. Assumptions, fitted to docs/sources.md §2.3 (H100 dense
// training 530–575 W/GPU), §1b (H200 PFI: dense ≈ 1.27, MoE PT ≈ 1.43, MoE FT ≈ 2.10) and the
// A100 sweep rows (data/a100_power_cap_sweep.csv: realized power at 400 W and PFI).
constexpr PretrainModel kPretrainModels[] = {
    {.name = "dense-pt",
     .moe = false,
     .iter_s = 1.2,
     .share = {0.30, 0.56, 0.0, 0.08, 0.06},
     .load = {{{0.88, 0.45, 0.97},
               {0.90, 0.45, 0.97},
               {0, 0, 0},
               {0.12, 0.25, 0.05},
               {0.30, 0.85, 0.15}}}},
    {.name = "dense-ft",
     .moe = false,
     .iter_s = 0.8,
     .share = {0.32, 0.48, 0.0, 0.10, 0.10},
     .load = {{{0.75, 0.55, 0.70},
               {0.78, 0.55, 0.70},
               {0, 0, 0},
               {0.12, 0.25, 0.05},
               {0.25, 0.80, 0.10}}}},
    {.name = "moe-pt",
     .moe = true,
     .iter_s = 1.5,
     .share = {0.26, 0.46, 0.14, 0.08, 0.06},
     .load = {{{0.82, 0.55, 0.82},
               {0.82, 0.55, 0.82},
               {0.15, 0.40, 0.05},
               {0.12, 0.25, 0.05},
               {0.30, 0.85, 0.15}}}},
    {.name = "moe-ft",
     .moe = true,
     .iter_s = 1.0,
     .share = {0.22, 0.34, 0.26, 0.08, 0.10},
     .load = {{{0.62, 0.65, 0.44},
               {0.62, 0.65, 0.44},
               {0.15, 0.40, 0.05},
               {0.12, 0.25, 0.05},
               {0.25, 0.80, 0.10}}}},
    // The two training rows of the A100 sweep (data/a100_power_cap_sweep.csv).
    // Fitted with `flexwatt fit` (sim/fit.hpp) to the rows' P/P_max and T/T_max at every cap.
    {.name = "mpt-13b-pt",
     .moe = false,
     .iter_s = 1.2,
     .share = {0.3135, 0.5858, 0.0, 0.0547, 0.0460},
     .load = {{{1.1031, 0.763, 0.7654},
               {1.1031, 0.763, 0.7654},
               {0, 0, 0},
               {0.12, 0.25, 0.05},
               {0.30, 0.85, 0.15}}}},
    {.name = "llama-8b-ft",
     .moe = false,
     .iter_s = 1.6,
     .share = {0.3140, 0.4833, 0.0, 0.0954, 0.1073},
     .load = {{{0.9737, 0.7094, 0.3937},
               {0.9737, 0.7094, 0.3937},
               {0, 0, 0},
               {0.12, 0.25, 0.05},
               {0.25, 0.80, 0.10}}}},
};

constexpr Phase kPretrainPhases[5] = {Phase::kForward, Phase::kBackward, Phase::kAllToAll,
                                      Phase::kAllReduce, Phase::kOptimizer};

struct Acc {
  double u = 0, m = 0, c = 0, t = 0;
  void add(const PhaseLoad& l, double dt) {
    u += l.u * dt;
    m += l.m * dt;
    c += l.c * dt;
    t += dt;
  }
};

void begin_grpo_step(const JobSpec& spec, WorkloadState& st) {
  st.group_size = static_cast<int>(st.knobs[kGroupSize]);
  st.seqs_total = spec.grpo.prompts_per_step * st.group_size;
  st.seqs_admitted = st.seqs_done = 0;
  st.decode_iter = 0;
  st.finish_heap.clear();
  st.prefill_left_s = 0;
  st.step_tokens = 0;
  st.phase = Phase::kGenerate;
}

// Sets the current work phase.
void set_work(WorkloadState& st, Phase p, double work_s, const PhaseLoad& load) {
  st.phase = p;
  st.work_left_s = work_s;
  st.cur_load = load;
}

// Runs the current work phase for up to *left seconds; returns true when it completed.
bool run_work(WorkloadState& st, double x, double* left, Acc& acc) {
  const double rate = clock_speed(st.cur_load.c, x);
  const double need = st.work_left_s / rate;
  const double t = std::min(*left, need);
  st.work_left_s -= t * rate;
  acc.add(st.cur_load, t);
  *left -= t;
  if (t >= need) {
    st.work_left_s = 0;
    return true;
  }
  return false;
}

void grpo_after_generate(const JobSpec& spec, WorkloadState& st) {
  const GrpoModel& m = *spec.grpo.model;
  const double tp_scale = static_cast<double>(m.tp_nominal) / spec.grpo.tp;
  set_work(st, Phase::kScore, st.step_tokens / m.score_tok_per_s * tp_scale, m.score);
}

void grpo_begin_update(const JobSpec& spec, WorkloadState& st) {
  const GrpoModel& m = *spec.grpo.model;
  const double tp_scale = static_cast<double>(m.tp_nominal) / spec.grpo.tp;
  const int n = std::max(1, st.seqs_total);
  const int mb_seqs = std::max(1, std::min(spec.grpo.micro_batch_seqs, n));
  const int n_mb = (n + mb_seqs - 1) / mb_seqs;
  const double mb_tokens = st.step_tokens / n_mb;
  const double occ = std::min(1.0, mb_tokens / m.update_sat_tokens);
  // Assumption: a micro-batch never runs faster than a 30 %-full one (latency floor), and an
  // under-occupied GPU's activity scales as 0.2 + 0.8·occupancy (SMs), 0.4 + 0.6·occ (memory).
  const double t_mb = m.update_s_per_token * std::max(mb_tokens, 0.3 * m.update_sat_tokens);
  PhaseLoad l = m.update;
  l.u *= 0.2 + 0.8 * occ;
  l.m *= 0.4 + 0.6 * occ;
  set_work(st, Phase::kUpdate, n_mb * t_mb * tp_scale, l);
  st.sub_phase = 0;
}

// Long by design: the GRPO phase machine (generate, score, update, sync) in one switch over shared
// state.
void advance_grpo(const JobSpec& spec, WorkloadState& st, double dt_s, double x, Acc& acc) {
  const GrpoParams& p = spec.grpo;
  const GrpoModel& m = *p.model;
  const double tp_scale = static_cast<double>(m.tp_nominal) / p.tp;
  double left = dt_s;
  for (int guard = 0; left > 1e-12 && guard < 100000; ++guard) {
    switch (st.phase) {
      case Phase::kGenerate: {
        const int conc =
            std::max(1, std::min(static_cast<int>(st.knobs[kGenConcurrency]), p.kv_capacity_seqs));
        while (static_cast<int>(st.finish_heap.size()) < conc && st.seqs_admitted < st.seqs_total) {
          const double median =
              p.completion_len_curve.empty()
                  ? p.completion_median_tokens
                  : p.completion_median_tokens * completion_len_factor(p, st.run_s);
          const double len = std::clamp(std::round(st.rng.lognormal(median, p.completion_sigma)),
                                        1.0, p.completion_max_tokens);
          st.finish_heap.push_back(st.decode_iter + len);
          std::push_heap(st.finish_heap.begin(), st.finish_heap.end(), std::greater<double>());
          st.prefill_left_s += p.prompt_tokens / m.prefill_tok_per_s * tp_scale;
          st.step_tokens += p.prompt_tokens + len;
          ++st.seqs_admitted;
        }
        if (st.prefill_left_s > 0) {
          const double rate = clock_speed(m.prefill.c, x);
          const double need = st.prefill_left_s / rate;
          const double t = std::min(left, need);
          st.prefill_left_s = t >= need ? 0 : st.prefill_left_s - t * rate;
          acc.add(m.prefill, t);
          left -= t;
          continue;
        }
        if (st.finish_heap.empty()) {
          if (p.generation_only) {  // proxy: the next rollout batch follows at once
            st.steps_total += 1;
            begin_grpo_step(spec, st);
          } else {
            grpo_after_generate(spec, st);
          }
          continue;
        }
        const double b = static_cast<double>(st.finish_heap.size());
        const double it_s = (m.it_base_s + m.it_per_seq_s * b) * tp_scale;
        const double iters_per_s = clock_speed(m.dec_c, x) / it_s;
        const double to_next = (st.finish_heap.front() - st.decode_iter) / iters_per_s;
        const double t = std::min(left, to_next);
        const double sat = m.dec_hill == 1 ? b / (b + m.dec_b_half)
                                           : 1.0 / (1.0 + std::pow(m.dec_b_half / b, m.dec_hill));
        acc.add({m.dec_u0 + m.dec_u1 * sat, m.dec_m0 + m.dec_m1 * sat, m.dec_c}, t);
        left -= t;
        st.tokens_total += b * t * iters_per_s;
        if (t >= to_next) {
          st.decode_iter = st.finish_heap.front();
          while (!st.finish_heap.empty() && st.finish_heap.front() <= st.decode_iter + 1e-9) {
            std::pop_heap(st.finish_heap.begin(), st.finish_heap.end(), std::greater<double>());
            st.finish_heap.pop_back();
            ++st.seqs_done;
          }
        } else {
          st.decode_iter += t * iters_per_s;
        }
        break;
      }
      case Phase::kScore:
        if (run_work(st, x, &left, acc)) grpo_begin_update(spec, st);
        break;
      case Phase::kUpdate:
        if (run_work(st, x, &left, acc)) {
          if (st.sub_phase == 0) {
            set_work(st, Phase::kUpdate, m.optim_s * tp_scale, m.optim);
            st.sub_phase = 1;
          } else {
            set_work(st, Phase::kSync, m.sync_s, m.sync);
          }
        }
        break;
      case Phase::kSync:
        if (run_work(st, x, &left, acc)) {
          st.steps_total += 1;
          begin_grpo_step(spec, st);
        }
        break;
      default:
        begin_grpo_step(spec, st);
        break;
    }
  }
}

void pretrain_set_phase(const JobSpec& spec, WorkloadState& st, int k) {
  const PretrainParams& p = spec.pretrain;
  st.sub_phase = k;
  if (k < 5) {
    double work = p.model.iter_s * p.model.share[k];
    if (k <= 1 && p.iter_jitter > 0) work *= st.rng.lognormal(1.0, p.iter_jitter);
    set_work(st, kPretrainPhases[k], work, p.model.load[k]);
  } else if (k == 5) {
    set_work(st, Phase::kDataStall, st.rng.exponential(p.stall_mean_s), {0.03, 0.05, 0.0});
  } else if (k == 6) {
    set_work(st, Phase::kCheckpoint, p.checkpoint_s, p.checkpoint_load);
  } else {  // duty-cycle low phase (evaluation / checkpoint / stall), reported as checkpoint
    const DutyCycle& d = spec.duty;
    set_work(st, Phase::kCheckpoint, st.rng.lognormal(d.length_s, d.length_jitter), d.load);
    st.train_since_duty_s = 0;
    st.next_duty_s = st.rng.lognormal(d.every_s, d.jitter);
  }
}

// Next phase after k (skipping empty ones); 0 starts a new iteration.
void pretrain_next(const JobSpec& spec, WorkloadState& st) {
  const PretrainParams& p = spec.pretrain;
  int k = st.sub_phase;
  if (k < 4) {
    ++k;
    while (k < 5 && p.model.share[k] <= 0) ++k;
    if (k < 5) return pretrain_set_phase(spec, st, k);
  }
  if (k <= 4) {  // an iteration ended
    st.steps_total += 1;
    st.tokens_total += p.tokens_per_iter;
    st.iters_since_ckpt += 1;
    if (p.stall_prob > 0 && st.rng.uniform() < p.stall_prob) return pretrain_set_phase(spec, st, 5);
    k = 5;
  }
  if (k <= 6 && spec.duty.every_s > 0 && st.train_since_duty_s >= st.next_duty_s) {
    return pretrain_set_phase(spec, st, 7);
  }
  if (k == 5 && p.checkpoint_every_iters > 0 && st.iters_since_ckpt >= p.checkpoint_every_iters) {
    st.iters_since_ckpt = 0;
    return pretrain_set_phase(spec, st, 6);
  }
  int first = 0;
  while (first < 4 && p.model.share[first] <= 0) ++first;
  pretrain_set_phase(spec, st, first);
}

void advance_pretrain(const JobSpec& spec, WorkloadState& st, double dt_s, double x, Acc& acc) {
  double left = dt_s;
  for (int guard = 0; left > 1e-12 && guard < 100000; ++guard) {
    const double before = left;
    const bool training = st.sub_phase < 5;
    const bool done = run_work(st, x, &left, acc);
    if (training) st.train_since_duty_s += before - left;
    if (done) pretrain_next(spec, st);
  }
}

}  // namespace

const GrpoModel* find_grpo_model(std::string_view name) {
  for (const auto& m : kGrpoModels) {
    if (m.name == name) return &m;
  }
  return nullptr;
}
const char* grpo_model_names() { return "qwen2.5-7b, qwen2.5-14b, qwen2.5-72b"; }

const PretrainModel* find_pretrain_model(std::string_view name) {
  for (const auto& m : kPretrainModels) {
    if (m.name == name) return &m;
  }
  return nullptr;
}
const char* pretrain_model_names() {
  return "dense-pt, dense-ft, moe-pt, moe-ft, mpt-13b-pt, llama-8b-ft";
}

double completion_len_factor(const GrpoParams& p, double t_s) {
  const auto& c = p.completion_len_curve;
  if (c.empty()) return 1.0;
  const double t = t_s + p.curve_shift_s;
  if (t <= c.front()[0]) return c.front()[1];
  if (t >= c.back()[0]) return c.back()[1];
  size_t i = 1;
  while (c[i][0] < t) ++i;
  const double w = (t - c[i - 1][0]) / (c[i][0] - c[i - 1][0]);
  return c[i - 1][1] + w * (c[i][1] - c[i - 1][1]);
}

const GrpoParams::Pause* grpo_pause_at(const GrpoParams& p, double t_s) {
  const double t = t_s + p.curve_shift_s;
  for (const GrpoParams::Pause& z : p.pauses) {
    if (t < z.start_s || t >= z.end_s) continue;
    if (std::fmod(t - z.start_s, z.every_s + z.length_s) >= z.every_s) return &z;
  }
  return nullptr;
}

double grpo_straggler_factor(const GrpoParams& p, double t_s) {
  const double t = t_s + p.curve_shift_s;
  double f = 1.0;
  for (const GrpoParams::Straggler& x : p.stragglers) {
    if (t >= x.start_s && t < x.end_s) f *= x.factor;
  }
  return f;
}

int kv_capacity_seqs(const GrpoParams& p, double hbm_gb) {
  // Assumption: the inference engine may use 90 % of device memory (vLLM's default
  // gpu_memory_utilization); it reserves KV space for prompt + max completion per sequence.
  const GrpoModel& m = *p.model;
  const double free_gb = 0.9 * hbm_gb - m.weights_gb / p.tp - m.trainer_reserve_gb;
  const double per_seq_gb =
      m.kv_bytes_per_token / p.tp * (p.prompt_tokens + p.completion_max_tokens) / 1e9;
  return std::max(1, static_cast<int>(std::floor(free_gb / per_seq_gb)));
}

bool responds_to_knob(JobKind kind, int q) {
  if (kind != JobKind::kGrpo) return false;
#ifdef FW_TEST_EXTRA_KNOB
  if (q == find_actuator("test_knob")) return true;  // tests/extra_knob/: response below
#endif
  return q == kGenConcurrency || q == kGroupSize;
}

void start_job(const JobSpec& spec, WorkloadState& st, double dt_s) {
  st.started = true;
  for (int q = 0; q < kNumKnobs; ++q) {
    if (responds_to_knob(spec.kind, q) && std::isnan(st.knobs[q])) st.knobs[q] = spec.knobs[q];
  }
  if (spec.kind == JobKind::kGrpo) {
    const int max_seqs = spec.grpo.prompts_per_step * static_cast<int>(spec.knob_max[kGroupSize]);
    st.finish_heap.reserve(
        std::max(max_seqs, spec.grpo.prompts_per_step * static_cast<int>(spec.knobs[kGroupSize])));
    begin_grpo_step(spec, st);
  } else {
    if (spec.duty.every_s > 0)
      st.next_duty_s = st.rng.lognormal(spec.duty.every_s, spec.duty.jitter);
    pretrain_set_phase(spec, st, 0);
  }
  if (spec.start_offset_s > 0 && dt_s > 0) {
    const int64_t n = static_cast<int64_t>(std::llround(spec.start_offset_s / dt_s));
    for (int64_t k = 0; k < n; ++k) advance_job(spec, st, dt_s, 1.0);
    st.tokens_total = 0;
    st.steps_total = 0;
  }
  st.run_s = 0;
}

Load advance_job(const JobSpec& spec, WorkloadState& st, double dt_s, double x) {
  Acc acc;
  if (spec.kind == JobKind::kGrpo) {
    const GrpoParams& g = spec.grpo;
    if (g.pauses.empty() && g.stragglers.empty()) {
      advance_grpo(spec, st, dt_s, x, acc);
    } else if (const GrpoParams::Pause* pz = grpo_pause_at(g, st.run_s)) {
      acc.add(pz->load, dt_s);  // no progress: the job's state is held
    } else {
      // A straggler: the job's work for dt_s / factor; its GPUs idle (load 0) the rest.
      // (u and m are averaged over dt_s below, so the idle share lowers them.)
      advance_grpo(spec, st, dt_s / grpo_straggler_factor(g, st.run_s), x, acc);
    }
    st.run_s += dt_s;
  } else {
    advance_pretrain(spec, st, dt_s, x, acc);
  }
  if (acc.t <= 0) return {};
  const double inv = 1.0 / dt_s;
#ifdef FW_TEST_EXTRA_KNOB
  // The extra-knob test's throwaway knob (0..10): SM activity × (0.5 + 0.05·test_knob).
  if (spec.kind == JobKind::kGrpo) acc.u *= 0.5 + 0.05 * st.knobs[find_actuator("test_knob")];
#endif
  return {acc.u * inv, acc.m * inv, acc.t > 0 ? acc.c / acc.t : 0};
}

}  // namespace fw::sim

#include "sim/scenario.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/config.hpp"
#include "sim/pipeline_scenario.hpp"

namespace fw::sim {
namespace {

#define FW_GET(var, expr) FW_ASSIGN_OR_RETURN(var, expr)

// One numeric key of a scenario section, declared once: its default, range and help drive
// the parsing (file:line: field errors from ConfigNode), the section's known keys,
// scenario_keys() and to_json(). Exactly one of `d` / `i` is set.
template <class T>
struct Key {
  const char* name;
  double def, lo, hi;
  const char* help;
  double T::*d = nullptr;
  int T::*i = nullptr;
};

template <class T>
Status read_keys(const ConfigNode& n, const std::vector<Key<T>>& keys, T& out) {
  for (const Key<T>& k : keys) {
    if (k.d != nullptr) {
      FW_GET(out.*k.d, n.get_double(k.name, k.def, k.lo, k.hi));
    } else {
      FW_GET(int64_t v, n.get_int(k.name, static_cast<int64_t>(k.def), static_cast<int64_t>(k.lo),
                                  static_cast<int64_t>(k.hi)));
      out.*k.i = static_cast<int>(v);
    }
  }
  return Status::Ok();
}

template <class T>
void write_keys(const std::vector<Key<T>>& keys, const T& v, nlohmann::json& out) {
  for (const Key<T>& k : keys) {
    if (k.d != nullptr) {
      out[k.name] = v.*k.d;
    } else {
      out[k.name] = v.*k.i;
    }
  }
}

template <class T>
void add_names(const std::vector<Key<T>>& keys, std::vector<std::string>& out) {
  for (const Key<T>& k : keys) out.emplace_back(k.name);
}

template <class T>
void add_infos(const char* section, const std::vector<Key<T>>& keys,
               std::vector<ScenarioKey>& out) {
  for (const Key<T>& k : keys) out.push_back({section, k.name, k.def, k.lo, k.hi, k.help});
}

const std::vector<Key<Scenario>> kRootKeys = {
    {"duration_s", 600, 0.1, 1e8, "episode length, s", &Scenario::duration_s},
    {"sample_period_s", 0.5, 0.01, 3600, "sensor sample period, s (>= sim.dt_s)",
     &Scenario::sample_period_s},
};

const std::vector<Key<SimParams>> kSimKeys = {
    {"dt_s", 0.1, 0.02, 0.5, "integration step, s", &SimParams::dt_s},
    {"noise_w", 1.0, 0, 100, "sensor noise sd, W", &SimParams::noise_w},
    {"fw_sense_tau_s", 0.3, 0.01, 10, "firmware power-sensing filter, s",
     &SimParams::fw_sense_tau_s},
    {"clock_tau_s", 0.2, 0.01, 10, "SM clock lag towards the firmware target, s",
     &SimParams::clock_tau_s},
    {"clock_up_tau_s", 1.5, 0.01, 100,
     "SM clock lag when raising towards the firmware target, s (assumption)",
     &SimParams::clock_up_tau_s},
    {"cap_margin", 0.015, 0, 0.5, "firmware setpoint below the cap, fraction of the cap",
     &SimParams::cap_margin_frac},
    {"ambient_c", 30, -20, 60, "ambient temperature, °C", &SimParams::ambient_c},
    {"thermal_c_per_w", 0.1, 0, 1, "steady-state temperature rise per watt, °C/W",
     &SimParams::thermal_c_per_w},
    {"thermal_tau_s", 20, 0.1, 3600, "thermal time constant, s", &SimParams::thermal_tau_s},
};

// GRPO keys with fixed defaults and ranges (model, tp, the knobs and their ranges are read
// by parse_grpo(): their defaults or ranges depend on other keys).
const std::vector<Key<GrpoParams>> kGrpoParamKeys = {
    {"prompts_per_step", 2, 1, 4096, "prompts per GRPO step", nullptr,
     &GrpoParams::prompts_per_step},
    {"prompt_tokens", 200, 1, 1e6, "prompt length, tokens", &GrpoParams::prompt_tokens},
    {"completion_median_tokens", 170, 1, 1e6, "median completion length, tokens",
     &GrpoParams::completion_median_tokens},
    {"completion_sigma", 0.8, 0, 3, "log-space sigma of completion lengths",
     &GrpoParams::completion_sigma},
    {"completion_max_tokens", 1024, 1, 1e6, "completion length cap, tokens",
     &GrpoParams::completion_max_tokens},
    {"micro_batch_seqs", 8, 1, 4096, "sequences per update micro-batch", nullptr,
     &GrpoParams::micro_batch_seqs},
};

// Pretraining keys with fixed defaults and ranges (workload, tp and iter_s are read by
// parse_pretrain()).
const std::vector<Key<PretrainParams>> kPretrainParamKeys = {
    {"tokens_per_iter", 4096.0 * 256, 1, 1e12, "trained tokens per iteration (whole job)",
     &PretrainParams::tokens_per_iter},
    {"iter_jitter", 0.01, 0, 1, "log-space sigma of the compute phases",
     &PretrainParams::iter_jitter},
    {"checkpoint_every_iters", 0, 0, 100000000, "iterations between checkpoints (0: none)", nullptr,
     &PretrainParams::checkpoint_every_iters},
    {"checkpoint_s", 20, 0, 36000, "checkpoint duration, s", &PretrainParams::checkpoint_s},
    {"stall_prob", 0.0, 0, 1, "data-stall probability per iteration", &PretrainParams::stall_prob},
    {"stall_mean_s", 0.5, 0, 3600, "mean data-stall duration, s", &PretrainParams::stall_mean_s},
};

Status parse_budget_entry(const ConfigNode& n, bool with_start, BudgetSchedule::Entry& e) {
  std::vector<std::string> keys = {"watts", "scope", "window_s"};
  if (with_start) keys.push_back("start_s");
  FW_RETURN_IF_ERROR(n.reject_unknown(keys));
  if (!n.has("watts")) return n.error("missing key 'watts'");
  FW_GET(e.budget.watts, n.get_double("watts", 0, 1e-3, 1e9));
  FW_GET(std::string scope, n.get_string("scope", "node"));
  if (!scope_from_name(scope, e.budget.scope)) {
    return n["scope"].error("'" + scope + "' is not one of gpu, job, node, fleet");
  }
  FW_GET(e.budget.window_s, n.get_double("window_s", 30, 0.1, 86400));
  if (with_start) {
    FW_GET(e.start_s, n.get_double("start_s", 0, 0, 1e9));
  }
  return Status::Ok();
}

Status parse_budget(const ConfigNode& n, BudgetSchedule& out) {
  out.entries.clear();
  if (!n.defined()) return n.error("missing key 'budget'");
  if (n.is_sequence()) {
    if (n.size() == 0) return n.error("empty budget schedule");
    for (size_t i = 0; i < n.size(); ++i) {
      BudgetSchedule::Entry e;
      FW_RETURN_IF_ERROR(parse_budget_entry(n.at(i), true, e));
      if (i == 0 && e.start_s != 0)
        return n.at(i)["start_s"].error("the first entry must start at 0");
      if (i > 0 && e.start_s <= out.entries.back().start_s) {
        return n.at(i)["start_s"].error("start_s must increase");
      }
      out.entries.push_back(e);
    }
    return Status::Ok();
  }
  BudgetSchedule::Entry e;
  FW_RETURN_IF_ERROR(parse_budget_entry(n, false, e));
  out.entries.push_back(e);
  return Status::Ok();
}

Status parse_gpus(const ConfigNode& n, std::vector<ClusterGpu>& out) {
  if (!n.is_sequence() || n.size() == 0) return n.error("expected a list of GPU entries");
  for (size_t i = 0; i < n.size(); ++i) {
    const ConfigNode e = n.at(i);
    FW_RETURN_IF_ERROR(e.reject_unknown({"model", "count", "power_cap_w"}));
    FW_GET(std::string model, e.get_string("model", "a100-sxm4-80gb"));
    const GpuPreset* p = find_gpu_preset(model);
    if (!p)
      return e["model"].error("unknown GPU '" + model + "' (known: " + gpu_preset_names() + ")");
    FW_GET(int64_t count, e.get_int("count", 1, 1, 4096));
    FW_GET(double cap, e.get_double("power_cap_w", p->tdp_w, p->min_cap_w, p->max_cap_w));
    for (int64_t k = 0; k < count; ++k) out.push_back({p, std::string(p->name), cap});
  }
  return Status::Ok();
}

// The knob keys a job of `kind` takes (the actuator table's rows it responds to).
void add_knob_keys(JobKind kind, std::vector<std::string>& out) {
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!responds_to_knob(kind, q)) continue;
    const ActuatorDef& a = kActuatorTable[q];
    for (std::string_view key : {a.name, a.keys.min_key, a.keys.max_key}) out.emplace_back(key);
  }
}

const std::vector<std::string> kCommonJobKeys = {
    "name", "kind", "gpus", "first_gpu", "start_s", "end_s", "tp", "start_offset_s", "hetero"};
const std::vector<std::string> kGrpoKeys = [] {
  std::vector<std::string> k = {"model", "generation_only",
                                // [[t_s, factor], ...]: the median completion length's
                                // factor over trace time (parse_len_curve()); default none
                                "completion_len_curve",
                                // [{factor, start_s, end_s}, ...] and [{start_s, end_s,
                                // every_s, length_s, sm, mem}, ...]: parse_phase_mix()
                                "stragglers", "pauses"};
  add_names(kGrpoParamKeys, k);
  add_knob_keys(JobKind::kGrpo, k);
  return k;
}();
const std::vector<std::string> kPretrainKeys = [] {
  std::vector<std::string> k = {"workload", "iter_s", "mix", "duty"};
  add_names(kPretrainParamKeys, k);
  add_knob_keys(JobKind::kPretrain, k);
  return k;
}();

// ---- Realism blocks (docs/simulator.md "Workload mix, duty cycles, heterogeneity") --------
// hetero: {offset_sd, noise_sd, noise_tau_s, imbalance, change_at_s, imbalance_after}; defaults
// from the public 8×H100 training log (docs/simulator.md): per-GPU steady means spread sd 0.8 %
// (offset_sd 0.006 of TDP), independent noise sd ≈ 12 W on 700 W (noise_sd 0.017 of TDP).
Status parse_hetero(const ConfigNode& job, Heterogeneity& h) {
  const ConfigNode n = job["hetero"];
  if (n.defined())
    FW_RETURN_IF_ERROR(n.reject_unknown(
        {"offset_sd", "noise_sd", "noise_tau_s", "imbalance", "change_at_s", "imbalance_after"}));
  FW_GET(h.offset_sd_frac, n.get_double("offset_sd", 0.006, 0, 0.5));
  FW_GET(const double noise, n.get_double("noise_sd", 0.017, 0, 0.5));
  h.noise_sd_w = noise;  // fraction of TDP until the GPU is known (scaled in parse_jobs)
  FW_GET(h.noise_tau_s, n.get_double("noise_tau_s", 1.0, 0.01, 3600));
  FW_GET(h.imbalance, n.get_double("imbalance", 0, 0, 0.9));
  FW_GET(h.change_at_s, n.get_double("change_at_s", 0, 0, 1e8));
  FW_GET(h.imbalance_after, n.get_double("imbalance_after", h.imbalance, 0, 0.9));
  return Status::Ok();
}

// mix: {sm, mem, compute_bound, comm_share}: the forward/backward load (u, m, c) and the share
// of the iteration outside forward/backward; defaults from the workload preset.
// duty: {every_s, length_s, jitter, length_jitter (= jitter), sm, mem}: periodic low phases;
// defaults (40 s, 17 s, 0.1, 0, 0.08) from the public 8×H100 training log (about 40 s of training,
// then ~17 s near 150 W per GPU).
Status parse_mix_duty(const ConfigNode& job, PretrainModel& m, DutyCycle& d) {
  const ConfigNode x = job["mix"];
  if (x.defined()) {
    FW_RETURN_IF_ERROR(x.reject_unknown({"sm", "mem", "compute_bound", "comm_share"}));
    const double fb = m.share[0] + m.share[1];
    FW_GET(const double u, x.get_double("sm", m.load[1].u, 0, 2));
    FW_GET(const double mm, x.get_double("mem", m.load[1].m, 0, 2));
    FW_GET(const double c, x.get_double("compute_bound", m.load[1].c, 0, 1));
    FW_GET(const double comm, x.get_double("comm_share", 1 - fb, 0, 0.9));
    for (int k = 0; k < 2; ++k) {
      m.load[k] = {u, mm, c};
      m.share[k] *= (1 - comm) / fb;
    }
    for (int k = 2; k < 5; ++k) m.share[k] *= fb < 1 ? comm / (1 - fb) : 0;
    if (fb >= 1 && comm > 0) m.share[3] = comm;
  }
  const ConfigNode n = job["duty"];
  if (n.defined())
    FW_RETURN_IF_ERROR(
        n.reject_unknown({"every_s", "length_s", "jitter", "length_jitter", "sm", "mem"}));
  FW_GET(d.every_s, n.get_double("every_s", 40, 0, 1e7));
  FW_GET(d.length_s, n.get_double("length_s", 17, 0, 1e6));
  FW_GET(d.jitter, n.get_double("jitter", 0.1, 0, 2));
  FW_GET(d.length_jitter, n.get_double("length_jitter", d.jitter, 0, 2));
  FW_GET(d.load.u, n.get_double("sm", 0.0, 0, 2));
  FW_GET(d.load.m, n.get_double("mem", 0.08, 0, 2));
  if (d.length_s <= 0) d.every_s = 0;
  return Status::Ok();
}

// completion_len_curve: [[t_s, factor], ...] with t_s >= 0 strictly increasing and factor in
// (0, 100]; a piecewise-linear factor on the median completion length over trace time,
// held at the end values (GrpoParams::completion_len_curve). Absent: no drift.
Status parse_len_curve(const ConfigNode& job, GrpoParams& g) {
  const ConfigNode n = job["completion_len_curve"];
  g.completion_len_curve.clear();
  if (!n.defined()) return Status::Ok();
  if (!n.is_sequence() || n.size() == 0) {
    return n.error("completion_len_curve: expected a list of [t_s, factor] points");
  }
  for (size_t i = 0; i < n.size(); ++i) {
    const ConfigNode pt = n.at(i);
    if (!pt.is_sequence() || pt.size() != 2) {
      return pt.error("completion_len_curve: point " + std::to_string(i) +
                      " must be [t_s, factor]");
    }
    auto t = pt.at(0).as_double(0, 1e9);  // errors name file:line: the point's path
    if (!t.ok()) return t.status();
    auto f = pt.at(1).as_double(1e-3, 100);
    if (!f.ok()) return f.status();
    if (!g.completion_len_curve.empty() && *t <= g.completion_len_curve.back()[0]) {
      return pt.error("completion_len_curve: t_s must increase");
    }
    g.completion_len_curve.push_back({*t, *f});
  }
  return Status::Ok();
}

// stragglers: [{factor (1..100, required), start_s (>= 0, default 0), end_s (> start_s,
// default never)}, ...]; pauses: [{start_s (default 0), end_s (> start_s, default never),
// every_s (> 0, required), length_s (> 0, required), sm (default 0), mem (default 0.08)},
// ...] (GrpoParams::stragglers / pauses). Absent: none.
Status parse_phase_mix(const ConfigNode& job, GrpoParams& g) {
  g.stragglers.clear();
  g.pauses.clear();
  const ConfigNode st = job["stragglers"];
  if (st.defined()) {
    if (!st.is_sequence())
      return st.error("stragglers: expected a list of {factor, start_s, end_s}");
    for (size_t i = 0; i < st.size(); ++i) {
      const ConfigNode e = st.at(i);
      if (!e.is_map()) return e.error("stragglers: expected {factor, start_s, end_s}");
      FW_RETURN_IF_ERROR(e.reject_unknown({"factor", "start_s", "end_s"}));
      if (!e.has("factor")) return e.error("stragglers: missing key 'factor'");
      GrpoParams::Straggler x;
      FW_GET(x.factor, e.get_double("factor", 1, 1, 100));
      FW_GET(x.start_s, e.get_double("start_s", 0, 0, 1e9));
      FW_GET(x.end_s, e.get_double("end_s", 1e300, 0, 1e300));
      if (x.end_s <= x.start_s) return e["end_s"].error("stragglers: end_s must be after start_s");
      g.stragglers.push_back(x);
    }
  }
  const ConfigNode ps = job["pauses"];
  if (ps.defined()) {
    if (!ps.is_sequence()) {
      return ps.error("pauses: expected a list of {start_s, end_s, every_s, length_s, sm, mem}");
    }
    for (size_t i = 0; i < ps.size(); ++i) {
      const ConfigNode e = ps.at(i);
      if (!e.is_map())
        return e.error("pauses: expected {start_s, end_s, every_s, length_s, sm, mem}");
      FW_RETURN_IF_ERROR(
          e.reject_unknown({"start_s", "end_s", "every_s", "length_s", "sm", "mem"}));
      for (const char* k : {"every_s", "length_s"}) {
        if (!e.has(k)) return e.error(std::string("pauses: missing key '") + k + "'");
      }
      GrpoParams::Pause z;
      FW_GET(z.start_s, e.get_double("start_s", 0, 0, 1e9));
      FW_GET(z.end_s, e.get_double("end_s", 1e300, 0, 1e300));
      if (z.end_s <= z.start_s) return e["end_s"].error("pauses: end_s must be after start_s");
      FW_GET(z.every_s, e.get_double("every_s", 0, 1e-3, 1e9));
      FW_GET(z.length_s, e.get_double("length_s", 0, 1e-3, 1e9));
      FW_GET(z.load.u, e.get_double("sm", 0, 0, 2));
      FW_GET(z.load.m, e.get_double("mem", 0.08, 0, 4));
      z.load.c = 0;
      g.pauses.push_back(z);
    }
  }
  return Status::Ok();
}

// The knob keys of a job, from the actuator table (every per-job row the job's kind responds
// to, workload.hpp responds_to_knob()): the range keys (min in [lo, hi], max in [min, hi]),
// then the setting (in [min, max]; an integer when the row's settings are whole).
Status parse_knobs(const ConfigNode& n, JobSpec& j) {
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!responds_to_knob(j.kind, q)) continue;
    const KnobKeys& k = kActuatorTable[q].keys;
    FW_GET(j.knob_min[q], n.get_double(std::string(k.min_key), k.min, k.lo, k.hi));
    FW_GET(j.knob_max[q], n.get_double(std::string(k.max_key), k.max, j.knob_min[q], k.hi));
  }
  for (int q = 0; q < kNumKnobs; ++q) {
    if (!responds_to_knob(j.kind, q)) continue;
    const KnobKeys& k = kActuatorTable[q].keys;
    const std::string key(kActuatorTable[q].name);
    if (k.integer) {
      FW_GET(int64_t v,
             n.get_int(key, static_cast<int64_t>(k.value), static_cast<int64_t>(j.knob_min[q]),
                       static_cast<int64_t>(j.knob_max[q])));
      j.knobs[q] = static_cast<double>(v);
    } else {
      FW_GET(j.knobs[q], n.get_double(key, k.value, j.knob_min[q], j.knob_max[q]));
    }
  }
  return Status::Ok();
}

Status parse_grpo(const ConfigNode& n, const ClusterGpu& gpu, JobSpec& j) {
  GrpoParams& g = j.grpo;
  FW_GET(std::string model, n.get_string("model", "qwen2.5-7b"));
  g.model = find_grpo_model(model);
  if (!g.model)
    return n["model"].error("unknown model '" + model + "' (known: " + grpo_model_names() + ")");
  j.preset = model;
  const int n_gpus = static_cast<int>(j.gpus.size());
  FW_GET(int64_t tp, n.get_int("tp", n_gpus, 1, 64));
  if (tp != n_gpus)
    return n["tp"].error("a GRPO job is one tensor-parallel replica: tp must equal gpus");
  g.tp = static_cast<int>(tp);
  FW_RETURN_IF_ERROR(parse_knobs(n, j));
  FW_RETURN_IF_ERROR(read_keys(n, kGrpoParamKeys, g));
  FW_GET(g.generation_only, n.get_bool("generation_only", false));
  FW_RETURN_IF_ERROR(parse_len_curve(n, g));
  FW_RETURN_IF_ERROR(parse_phase_mix(n, g));
  g.kv_capacity_seqs = kv_capacity_seqs(g, gpu.preset->hbm_gb);
  const double free_gb =
      0.9 * gpu.preset->hbm_gb - g.model->weights_gb / g.tp - g.model->trainer_reserve_gb;
  if (free_gb <= 0) {
    return n["gpus"].error("model " + model + " does not fit: " + std::to_string(g.tp) + " × " +
                           std::string(gpu.preset->name) + " leave no KV-cache memory");
  }
  return Status::Ok();
}

Status parse_pretrain(const ConfigNode& n, JobSpec& j) {
  PretrainParams& p = j.pretrain;
  FW_GET(std::string w, n.get_string("workload", "dense-pt"));
  const PretrainModel* m = find_pretrain_model(w);
  if (!m)
    return n["workload"].error("unknown workload '" + w + "' (known: " + pretrain_model_names() +
                               ")");
  j.preset = w;
  p.model = *m;
  const int n_gpus = static_cast<int>(j.gpus.size());
  FW_GET(int64_t tp, n.get_int("tp", std::min(8, n_gpus), 1, 64));
  if (n_gpus % tp != 0) return n["tp"].error("gpus must be a multiple of tp");
  p.tp = static_cast<int>(tp);
  FW_GET(p.model.iter_s, n.get_double("iter_s", m->iter_s, 1e-3, 3600));
  FW_RETURN_IF_ERROR(read_keys(n, kPretrainParamKeys, p));
  p.checkpoint_load = {0.05, 0.10, 0.0};  // assumption: I/O bound, GPUs nearly idle
  return parse_mix_duty(n, p.model, j.duty);
}

Status parse_jobs(const ConfigNode& n, const std::vector<ClusterGpu>& gpus, StartStrategy start,
                  std::vector<JobSpec>& out) {
  if (!n.defined()) return Status::Ok();
  if (!n.is_sequence()) return n.error("expected a list of jobs");
  int next_gpu = 0;
  std::vector<int> owner(gpus.size(), -1);
  for (size_t i = 0; i < n.size(); ++i) {
    const ConfigNode e = n.at(i);
    JobSpec j;
    FW_GET(std::string kind, e.get_string("kind", "grpo"));
    std::vector<std::string> keys = kCommonJobKeys;
    if (kind == "grpo") {
      j.kind = JobKind::kGrpo;
      keys.insert(keys.end(), kGrpoKeys.begin(), kGrpoKeys.end());
    } else if (kind == "pretrain") {
      j.kind = JobKind::kPretrain;
      keys.insert(keys.end(), kPretrainKeys.begin(), kPretrainKeys.end());
    } else if (kind == "pipeline") {  // sim/pipeline_scenario.hpp
      j.kind = JobKind::kPipeline;
      keys.insert(keys.end(), pipeline_job_keys().begin(), pipeline_job_keys().end());
    } else {
      return e["kind"].error("'" + kind + "' is not one of grpo, pretrain, pipeline");
    }
    FW_RETURN_IF_ERROR(e.reject_unknown(keys));
    FW_GET(j.name, e.get_string("name", kind + "-" + std::to_string(i)));
    FW_GET(int64_t count, e.get_int("gpus", 1, 1, static_cast<int64_t>(gpus.size())));
    FW_GET(int64_t first,
           e.get_int("first_gpu", next_gpu, 0, static_cast<int64_t>(gpus.size()) - 1));
    if (first + count > static_cast<int64_t>(gpus.size())) {
      return e["gpus"].error("needs GPUs " + std::to_string(first) + ".." +
                             std::to_string(first + count - 1) + " but the scenario has " +
                             std::to_string(gpus.size()));
    }
    for (int64_t k = first; k < first + count; ++k) {
      if (owner[k] >= 0)
        return e["gpus"].error("GPU " + std::to_string(k) + " already runs job " +
                               std::to_string(owner[k]));
      if (gpus[k].preset != gpus[first].preset)
        return e["gpus"].error("a job's GPUs must be one model");
      owner[k] = static_cast<int>(i);
      j.gpus.push_back(static_cast<int>(k));
    }
    next_gpu = static_cast<int>(first + count);
    FW_GET(j.start_s, e.get_double("start_s", 0, 0, 1e9));
    if (e.has("end_s")) {
      FW_GET(j.end_s, e.get_double("end_s", 0, 0, 1e9));
      if (!(j.end_s > j.start_s)) return e["end_s"].error("must be after start_s");
      if (j.kind == JobKind::kPipeline) return e["end_s"].error("not for pipeline jobs");
    }
    if (e.has("start_offset_s") && start != StartStrategy::kManual) {
      return e["start_offset_s"].error(
          "conflicts with fleet.start: " + std::string(start_strategy_name(start)) +
          " (per-job offsets need fleet.start: manual)");
    }
    FW_GET(j.start_offset_s, e.get_double("start_offset_s", 0, 0, 1e7));
    if (j.kind == JobKind::kPipeline) {
      if (start != StartStrategy::kManual) {
        return e["kind"].error("pipeline jobs need fleet.start: manual");
      }
      FW_RETURN_IF_ERROR(parse_pipeline_job(e, gpus[first], j));
      out.push_back(std::move(j));
      continue;
    }
    if (j.kind == JobKind::kGrpo) {
      FW_RETURN_IF_ERROR(parse_grpo(e, gpus[first], j));
    } else {
      FW_RETURN_IF_ERROR(parse_pretrain(e, j));
    }
    FW_RETURN_IF_ERROR(parse_hetero(e, j.hetero));
    j.hetero.noise_sd_w *= gpus[first].preset->tdp_w;
    out.push_back(std::move(j));
  }
  return Status::Ok();
}

Result<Scenario> from_config(ConfigNode& root, const std::string& name,
                             const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) {
    // `--set fleet.start=…` works on scenarios without a fleet section.
    if (o.rfind("fleet.", 0) == 0 && root.is_map() && !root.has("fleet")) {
      root.raw()["fleet"] = YAML::Node(YAML::NodeType::Map);
    }
    FW_RETURN_IF_ERROR(apply_override(root, o));
  }
  std::vector<std::string> root_keys = {"name", "description"};
  add_names(kRootKeys, root_keys);
  root_keys.insert(root_keys.end(), {"sim", "gpus", "budget", "jobs", "fleet"});
  FW_RETURN_IF_ERROR(root.reject_unknown(root_keys));
  Scenario s;
  s.path = name;
  s.overrides = overrides;
  FW_GET(s.name, root.get_string("name", name));
  FW_GET(s.description, root.get_string("description", ""));
  FW_RETURN_IF_ERROR(read_keys(root, kRootKeys, s));
  const ConfigNode sim = root["sim"];
  if (sim.defined()) {
    std::vector<std::string> sim_keys;
    add_names(kSimKeys, sim_keys);
    FW_RETURN_IF_ERROR(sim.reject_unknown(sim_keys));
  }
  FW_RETURN_IF_ERROR(read_keys(sim, kSimKeys, s.sim));
  if (s.sample_period_s < s.sim.dt_s - 1e-12) {
    return root["sample_period_s"].error("must be at least sim.dt_s");
  }
  FW_RETURN_IF_ERROR(parse_gpus(root["gpus"], s.gpus));
  FW_RETURN_IF_ERROR(parse_budget(root["budget"], s.budget));
  const ConfigNode fleet = root["fleet"];
  if (fleet.defined()) {
    if (!fleet.is_map()) return fleet.error("expected a map, e.g. {start: staggered}");
    FW_RETURN_IF_ERROR(fleet.reject_unknown({"start"}));
    FW_GET(std::string start, fleet.get_string("start", "manual"));
    if (!start_strategy_from_name(start, s.fleet_start)) {
      return fleet["start"].error("'" + start +
                                  "' is not one of manual, aligned, random, staggered");
    }
  }
  FW_RETURN_IF_ERROR(parse_jobs(root["jobs"], s.gpus, s.fleet_start, s.jobs));
  return s;
}

#undef FW_GET

}  // namespace

Result<Scenario> parse_scenario(const std::string& text, const std::string& name,
                                const std::vector<std::string>& overrides) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::parse(text, name));
  return from_config(root, name, overrides);
}

Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  FW_ASSIGN_OR_RETURN(ConfigNode root, ConfigNode::load_file(path));
  return from_config(root, path, overrides);
}

std::vector<ScenarioKey> scenario_keys() {
  std::vector<ScenarioKey> out;
  add_infos("", kRootKeys, out);
  add_infos("sim", kSimKeys, out);
  add_infos("jobs[] (grpo)", kGrpoParamKeys, out);
  add_infos("jobs[] (pretrain)", kPretrainParamKeys, out);
  return out;
}

nlohmann::json Scenario::to_json() const {
  nlohmann::json j;
  j["name"] = name;
  j["path"] = path;
  j["overrides"] = overrides;
  write_keys(kRootKeys, *this, j);
  j["sim"] = nlohmann::json::object();
  write_keys(kSimKeys, sim, j["sim"]);
  nlohmann::json g = nlohmann::json::array();
  for (const auto& x : gpus) {
    g.push_back({{"model", std::string(x.preset->name)}, {"power_cap_w", x.power_cap_w}});
  }
  j["gpus"] = g;
  nlohmann::json jobs_j = nlohmann::json::array();
  for (const auto& x : jobs) {
    nlohmann::json o = {{"name", x.name},
                        {"gpus", x.gpus},
                        {"start_s", x.start_s},
                        {"preset", x.preset},
                        {"start_offset_s", x.start_offset_s}};
    if (std::isfinite(x.end_s)) o["end_s"] = x.end_s;
    if (x.kind == JobKind::kPipeline) {
      o.update(pipeline_job_json(x));
      jobs_j.push_back(o);
      continue;
    }
    if (x.kind == JobKind::kGrpo) {
      o["kind"] = "grpo";
      o["tp"] = x.grpo.tp;
      o["kv_capacity_seqs"] = x.grpo.kv_capacity_seqs;
      write_keys(kGrpoParamKeys, x.grpo, o);
      o["generation_only"] = x.grpo.generation_only;
      if (!x.grpo.completion_len_curve.empty()) {
        o["completion_len_curve"] = x.grpo.completion_len_curve;
      }
      for (const GrpoParams::Straggler& st : x.grpo.stragglers) {
        nlohmann::json e = {{"factor", st.factor}, {"start_s", st.start_s}};
        if (st.end_s < 1e299) e["end_s"] = st.end_s;
        o["stragglers"].push_back(e);
      }
      for (const GrpoParams::Pause& z : x.grpo.pauses) {
        nlohmann::json e = {{"start_s", z.start_s},
                            {"every_s", z.every_s},
                            {"length_s", z.length_s},
                            {"sm", z.load.u},
                            {"mem", z.load.m}};
        if (z.end_s < 1e299) e["end_s"] = z.end_s;
        o["pauses"].push_back(e);
      }
    } else {
      o["kind"] = "pretrain";
      o["moe"] = x.pretrain.model.moe;
      o["tp"] = x.pretrain.tp;
      write_keys(kPretrainParamKeys, x.pretrain, o);
      o["duty"] = {{"every_s", x.duty.every_s}, {"length_s", x.duty.length_s}};
    }
    o["knobs"] = nlohmann::json::object();  // the knobs the job responds to, from the table
    for (int q = 0; q < kNumKnobs; ++q) {
      const KnobRange r = knob_range(x, q);
      if (!r.available) continue;
      const std::string name(kKnobNames[q]);
      if (kActuatorTable[q].keys.integer) {
        o["knobs"][name] = static_cast<int64_t>(x.knobs[q]);
      } else {
        o["knobs"][name] = x.knobs[q];
      }
      if (!o.contains("knob_ranges")) o["knob_ranges"] = nlohmann::json::object();
      o["knob_ranges"][name] = {r.min, r.max};
    }
    o["hetero"] = {{"offset_sd", x.hetero.offset_sd_frac},
                   {"noise_sd_w", x.hetero.noise_sd_w},
                   {"imbalance", x.hetero.imbalance}};
    if (x.hetero.change_at_s > 0) {
      o["hetero"]["change_at_s"] = x.hetero.change_at_s;
      o["hetero"]["imbalance_after"] = x.hetero.imbalance_after;
    }
    jobs_j.push_back(o);
  }
  j["jobs"] = jobs_j;
  nlohmann::json b = nlohmann::json::array();
  for (const auto& e : budget.entries) {
    b.push_back({{"start_s", e.start_s},
                 {"watts", e.budget.watts},
                 {"scope", std::string(scope_name(e.budget.scope))},
                 {"window_s", e.budget.window_s}});
  }
  j["budget"] = b;
  j["fleet"] = {{"start", std::string(start_strategy_name(fleet_start))}};
  return j;
}

std::vector<JobSpec> resolve_jobs(const Scenario& s, uint64_t seed) {
  std::vector<JobSpec> jobs = s.jobs;
  const std::vector<double> off = start_offsets_s(jobs, s.fleet_start, s.sim.dt_s, seed);
  for (size_t j = 0; j < jobs.size(); ++j) jobs[j].start_offset_s = off[j];
  return jobs;
}

std::unique_ptr<Cluster> make_cluster(const Scenario& s, uint64_t seed) {
  return std::make_unique<Cluster>(s.sim, s.gpus, resolve_jobs(s, seed), seed);
}

std::unique_ptr<fw::Plant> make_plant(const Scenario& s, uint64_t seed) {
  return make_cluster(s, seed);
}

Scenario shifted_to(const Scenario& s, double t0_s) {
  Scenario shifted = s;
  for (JobSpec& j : shifted.jobs) {
    j.grpo.curve_shift_s = t0_s;
    if (j.end_s <= t0_s) {
      j.start_s = 1e12;
      j.end_s = std::numeric_limits<double>::infinity();
    } else {
      j.start_s = std::max(0.0, j.start_s - t0_s);
      j.end_s -= t0_s;
    }
  }
  return shifted;
}

}  // namespace fw::sim

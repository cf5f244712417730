#include "sim/pipeline_recording.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "pipeline/one_f_one_b.hpp"
#include "pipeline/planner.hpp"
#include "sim/pipeline_profile.hpp"

namespace fw::sim {

Result<PipelineRecording> record_pipeline_run(const PipelineJobSpec& spec_in,
                                              const std::vector<CapPhase>& phases,
                                              const PipelineRecordingOptions& opt) {
  if (phases.empty() || phases.front().start_s != 0) {
    return Status::InvalidArgument("record_pipeline_run: the first cap phase must start at 0");
  }
  for (size_t i = 1; i < phases.size(); ++i) {
    if (phases[i].start_s < phases[i - 1].start_s) {
      return Status::InvalidArgument("record_pipeline_run: cap phases out of order");
    }
  }
  if (!(opt.duration_s > 0) || !(opt.sample_period_s > 0)) {
    return Status::InvalidArgument("record_pipeline_run: duration and sample period must be > 0");
  }
  PipelineJobSpec spec = spec_in;
  spec.stragglers.clear();  // applied here at each op's start
  const int S = static_cast<int>(spec.stages.size()), dp = spec.dp, G = S * dp;
  auto cap_at = [&](double t) {
    double c = phases.front().cap_w;
    for (const auto& ph : phases) {
      if (ph.start_s <= t) c = ph.cap_w;
    }
    return c;
  };
  std::map<double, PipelineIteration> cache;
  auto rates = [&](double t) -> Result<const PipelineIteration*> {
    const double c = cap_at(t);
    auto it = cache.find(c);
    if (it == cache.end()) {
      std::vector<double> caps(static_cast<size_t>(G), c);
      FW_ASSIGN_OR_RETURN(auto r, pipeline_iteration(spec, caps, 0));
      it = cache.emplace(c, std::move(r)).first;
    }
    return &it->second;
  };
  PipelineRecording out;
  for (int p = 0; p < dp; ++p) {
    for (int s = 0; s < S; ++s) {
      pipeline::RankTimings r;
      r.source = "simulated rank " + std::to_string(p * S + s);
      r.stage = s;
      r.stages = S;
      r.pipeline = p;
      r.gpu = p * S + s;
      out.ranks.push_back(r);
    }
  }
  struct Busy {
    double start, end, power_w;
  };
  std::vector<std::vector<Busy>> busy(static_cast<size_t>(G));
  const pipeline::OneFOneB dag(S, spec.microbatches);
  const auto& ops = dag.ops();
  std::vector<double> end(ops.size());
  double t0 = 0;
  int64_t step = 0;
  while (t0 < opt.duration_s) {
    double t_end = t0;
    for (int p = 0; p < dp; ++p) {
      for (size_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        double start = t0;
        if (op.prev >= 0) start = std::max(start, end[op.prev]);
        if (op.dep >= 0) start = std::max(start, end[op.dep]);
        FW_ASSIGN_OR_RETURN(const PipelineIteration* it, rates(start));
        const int k = p * S + op.stage;
        double factor = 1;
        for (const auto& st : spec_in.stragglers) {
          if (st.pipeline == p && (st.stage < 0 || st.stage == op.stage) && start >= st.start_s &&
              start < st.end_s)
            factor *= st.factor;
        }
        const auto& w = spec.stages[op.stage];
        const double d = (op.instr == pipeline::Instr::kForward ? w.forward_s : w.backward_s) *
                         it->op_slow[k] * factor;
        end[i] = start + d;
        t_end = std::max(t_end, end[i]);
        busy[k].push_back({start, end[i], it->compute_w[k]});
        out.ranks[k].ops.push_back(
            {op.instr, op.microbatch, step, opt.start_unix_s + start, opt.start_unix_s + end[i]});
      }
    }
    for (auto& r : out.ranks)
      r.steps.push_back({step, opt.start_unix_s + t0, opt.start_unix_s + t_end});
    t0 = t_end;
    ++step;
  }
  out.iterations = static_cast<int>(step);
  // Trace rows.
  std::mt19937_64 rng(opt.seed);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> e_prev(static_cast<size_t>(G), 0);
  std::vector<size_t> head(static_cast<size_t>(G), 0);
  std::vector<double> e_busy(static_cast<size_t>(G), 0);  // Σ (P − P_block)·t of ops ended
  auto energy_at = [&](int k, double t) {
    // Ops wholly before t are accumulated in e_busy (head moves forward); partial ones added.
    auto& b = busy[k];
    while (head[k] < b.size() && b[head[k]].end <= t) {
      e_busy[k] += (b[head[k]].power_w - spec.blocking_w) * (b[head[k]].end - b[head[k]].start);
      ++head[k];
    }
    double e = spec.blocking_w * t + e_busy[k];
    for (size_t i = head[k]; i < b.size() && b[i].start < t; ++i) {
      e += (b[i].power_w - spec.blocking_w) * (std::min(t, b[i].end) - b[i].start);
    }
    return e;
  };
  const double fmax = spec.gpu->sm_clock_max_mhz;
  const int n = static_cast<int>(std::floor(opt.duration_s / opt.sample_period_s));
  for (int i = 0; i <= n; ++i) {
    const double t = i * opt.sample_period_s;
    FW_ASSIGN_OR_RETURN(const PipelineIteration* it, rates(t));
    for (int k = 0; k < G; ++k) {
      const double e = energy_at(k, t);
      pipeline::GpuSample s;
      s.time_s = t;
      s.gpu = k;
      s.energy_j = e;
      s.power_w = (i == 0 ? spec.blocking_w : (e - e_prev[k]) / opt.sample_period_s) +
                  (opt.noise_w > 0 ? opt.noise_w * noise(rng) : 0.0);
      s.cap_w = cap_at(t);
      s.sm_clock_mhz = std::round(it->clock_x[k] * fmax);
      e_prev[k] = e;
      out.samples.push_back(s);
    }
  }
  return out;
}

Result<PipelineRecording> record_probe_run(const PipelineJobSpec& spec,
                                           const pipeline::ProbePlan& plan,
                                           PipelineRecordingOptions opt) {
  if (!spec.gpu || plan.steps.empty()) {
    return Status::InvalidArgument("record_probe_run: needs a GPU and a probe plan");
  }
  std::vector<CapPhase> phases;
  for (const auto& st : plan.steps) phases.push_back({st.start_s, st.cap_w});
  phases.push_back({plan.total_s, spec.gpu->max_cap_w});
  opt.duration_s = plan.total_s;
  return record_pipeline_run(spec, phases, opt);
}

Status write_recording(const std::string& dir, const PipelineRecording& rec, double start_unix_s) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::InvalidArgument(dir + ": cannot create: " + ec.message());
  for (size_t i = 0; i < rec.ranks.size(); ++i) {
    char name[48];
    std::snprintf(name, sizeof name, "/rank-%03u.jsonl", static_cast<unsigned>(i % 100000));
    FW_RETURN_IF_ERROR(pipeline::write_rank_timings(dir + name, rec.ranks[i], start_unix_s));
  }
  FW_RETURN_IF_ERROR(pipeline::write_gpu_samples(dir + "/gpus.csv", rec.samples));
  std::ofstream meta(dir + "/meta.json", std::ios::trunc);
  char buf[96];
  std::snprintf(buf, sizeof buf, "{\"format\": \"flexwatt-trace/1\", \"start_unix_s\": %.6f}\n",
                start_unix_s);
  meta << buf;
  if (!meta) return Status::InvalidArgument(dir + "/meta.json: write failed");
  return Status::Ok();
}

Result<OfflineCheck> check_against_offline(const PipelineJobSpec& spec,
                                           const pipeline::StageProfile& acquired,
                                           int microbatches) {
  if (!spec.gpu) return Status::InvalidArgument("check_against_offline: the job has no GPU");
  pipeline::PlanOptions po;
  po.microbatches = microbatches > 0 ? microbatches : spec.microbatches;
  po.tp = spec.tp;
  po.global_batch = po.microbatches * spec.dp;
  po.blocking_w = spec.blocking_w;
  po.min_cap_w = spec.gpu->min_cap_w;
  po.max_cap_w = spec.gpu->max_cap_w;
  po.min_segment_s = pipeline::kCapSettlingS;
  FW_ASSIGN_OR_RETURN(auto offline, profile_from_spec(spec));
  FW_ASSIGN_OR_RETURN(auto p_off, pipeline::plan_pipeline(offline, po));
  FW_ASSIGN_OR_RETURN(auto p_acq, pipeline::plan_pipeline(acquired, po));
  return OfflineCheck{p_off.best().energy_saved, p_acq.best().energy_saved, po.microbatches};
}

}  // namespace fw::sim

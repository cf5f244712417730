#include "sim/pipeline_job.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "pipeline/one_f_one_b.hpp"

namespace fw::sim {

double CapResponse::speed_at(double cap) const {
  const size_t n = cap_w.size();
  if (n == 0 || cap >= cap_w.back()) return 1.0;
  if (cap <= cap_w.front()) {
    if (n < 2) return speed.front();
    const double slope = (speed[1] - speed[0]) / (cap_w[1] - cap_w[0]);
    return std::max(0.05, speed[0] + slope * (cap - cap_w[0]));
  }
  const size_t i = static_cast<size_t>(std::upper_bound(cap_w.begin(), cap_w.end(), cap) -
                                       cap_w.begin());  // cap_w[i-1] <= cap < cap_w[i]
  const double t = (cap - cap_w[i - 1]) / (cap_w[i] - cap_w[i - 1]);
  return speed[i - 1] + t * (speed[i] - speed[i - 1]);
}

double CapResponse::compute_w(double cap, double margin_frac) const {
  return std::min(cap * (1 - margin_frac), uncapped_w);
}

Result<PipelineIteration> pipeline_iteration(const PipelineJobSpec& spec,
                                             std::span<const double> caps_w, double now_s) {
  const int S = static_cast<int>(spec.stages.size());
  if (!spec.gpu || S < 1 || spec.microbatches < 1 || spec.dp < 1 || spec.tp < 1) {
    return Status::InvalidArgument("pipeline job: needs a GPU, stages, micro-batches, dp, tp");
  }
  if (!spec.stage_loads.empty() && spec.stage_loads.size() != static_cast<size_t>(S)) {
    return Status::InvalidArgument("pipeline job: " + std::to_string(spec.stage_loads.size()) +
                                   " stage loads for " + std::to_string(S) + " stages");
  }
  if (caps_w.size() != static_cast<size_t>(spec.dp) * S) {
    return Status::InvalidArgument("pipeline job: " + std::to_string(caps_w.size()) + " caps for " +
                                   std::to_string(spec.dp * S) + " stage GPUs");
  }
  const pipeline::OneFOneB dag(S, spec.microbatches);
  PipelineIteration out;
  std::vector<double> d(static_cast<size_t>(S) * 2 * pipeline::kPhases), scratch;
  std::vector<double> ecomp(static_cast<size_t>(spec.dp), 0), busy(static_cast<size_t>(spec.dp));
  out.clock_x.assign(static_cast<size_t>(spec.dp) * S, 1.0);
  // The firmware regulates power averaged over a window longer than one op (assumption: over
  // the iteration, docs/simulator.md): a stage that waits part of the time at blocking_w may
  // draw more than its cap while it computes. Its busy share depends on the clocks through the
  // critical path: a fixed point, found by iterating from busy share 1.
  std::vector<double> busy_share(static_cast<size_t>(spec.dp) * S, 1.0);
  std::vector<double> compute_pw(static_cast<size_t>(spec.dp) * S, 0.0);
  std::vector<double> op_slow(static_cast<size_t>(spec.dp) * S, 1.0);
  std::vector<std::vector<double>> last_busy;
  const bool measured = !spec.cap_response.empty();
  const int rounds = spec.average_over_iteration && !measured ? 8 : 1;
  for (int round = 0; round < rounds; ++round) {
    out.pipeline_time_s.clear();
    std::vector<std::vector<double>> stage_busy(static_cast<size_t>(spec.dp));
    for (int p = 0; p < spec.dp; ++p) {
      double e = 0, b = 0;
      for (int s = 0; s < S; ++s) {
        double factor = 1;
        for (const auto& st : spec.stragglers) {
          if (st.pipeline == p && (st.stage < 0 || st.stage == s) && now_s >= st.start_s &&
              now_s < st.end_s)
            factor *= st.factor;
        }
        const Load& load = spec.stage_loads.empty() ? spec.load : spec.stage_loads[s];
        const double cap = std::clamp(caps_w[p * S + s], spec.gpu->min_cap_w, spec.gpu->max_cap_w);
        const double setpoint = cap * (1 - spec.margin_frac);
        const double share = std::clamp(busy_share[p * S + s], 0.05, 1.0);
        const double compute_w = (setpoint - (1 - share) * spec.blocking_w) / share;
        const double x = measured ? spec.cap_response.speed_at(cap)
                                  : clock_for_cap(*spec.gpu, load, compute_w, 1.0);
        out.clock_x[p * S + s] = x;
        const double slow = factor / (measured ? x : clock_speed(load.c, x));
        const double power = measured ? spec.cap_response.compute_w(cap, spec.margin_frac)
                                      : gpu_power_w(*spec.gpu, load, x);
        compute_pw[p * S + s] = power;
        op_slow[p * S + s] = 1 / (measured ? x : clock_speed(load.c, x));
        const double t[2] = {spec.stages[s].forward_s * slow, spec.stages[s].backward_s * slow};
        for (int k = 0; k < 2; ++k) {
          for (int ph = 0; ph < pipeline::kPhases; ++ph) {
            d[pipeline::OneFOneB::slot(s, static_cast<pipeline::Instr>(k),
                                       static_cast<pipeline::Phase>(ph))] = t[k];
          }
        }
        const double sb = spec.microbatches * (t[0] + t[1]);
        stage_busy[p].push_back(sb);
        b += sb;
        e += power * sb;
      }
      out.pipeline_time_s.push_back(dag.iteration_time(d.data(), scratch));
      ecomp[p] = e;
      busy[p] = b;
    }
    const double t_iter = *std::max_element(out.pipeline_time_s.begin(), out.pipeline_time_s.end());
    last_busy = stage_busy;
    double moved = 0;
    for (int p = 0; p < spec.dp; ++p) {
      for (int s = 0; s < S; ++s) {
        const double share = stage_busy[p][s] / t_iter;
        moved = std::max(moved, std::abs(share - busy_share[p * S + s]));
        busy_share[p * S + s] = share;
      }
    }
    if (moved < 1e-4) break;  // the fixed point (clocks follow the shares)
  }
  out.time_s = *std::max_element(out.pipeline_time_s.begin(), out.pipeline_time_s.end());
  for (int p = 0; p < spec.dp; ++p) {
    out.energy_j += spec.tp * (ecomp[p] + spec.blocking_w * (S * out.time_s - busy[p]));
  }
  out.gpu_power_w.resize(static_cast<size_t>(spec.dp) * S);
  out.busy_share.resize(out.gpu_power_w.size());
  for (int p = 0; p < spec.dp; ++p) {
    for (int s = 0; s < S; ++s) {
      const double sb = last_busy[p][s];
      const size_t i = static_cast<size_t>(p) * S + s;
      out.busy_share[i] = out.time_s > 0 ? sb / out.time_s : 1.0;
      out.gpu_power_w[i] =
          out.time_s > 0 ? (compute_pw[i] * sb + spec.blocking_w * (out.time_s - sb)) / out.time_s
                         : compute_pw[i];
    }
  }
  out.compute_w = std::move(compute_pw);
  out.op_slow = std::move(op_slow);
  return out;
}

RankPhase rank_phase(pipeline::Phase p) {
  switch (p) {
    case pipeline::Phase::kFill:
    case pipeline::Phase::kWarmup:
      return RankPhase::kWarmup;
    case pipeline::Phase::kSteady:
      return RankPhase::kSteady;
    case pipeline::Phase::kCooldown:
    case pipeline::Phase::kDrain:
      return RankPhase::kCooldown;
  }
  return RankPhase::kSteady;
}

PipelineRun::PipelineRun(const PipelineJobSpec& spec)
    : S_(static_cast<int>(spec.stages.size())),
      M_(spec.microbatches),
      dp_(spec.dp),
      work_(spec.stages),
      stragglers_(spec.stragglers),
      blocking_w_(spec.blocking_w),
      dag_(std::max(1, S_), std::max(1, M_)) {
  const auto& ops = dag_.ops();
  stage_ops_.assign(static_cast<size_t>(S_), {});
  for (size_t i = 0; i < ops.size(); ++i) {
    stage_ops_[ops[i].stage].push_back(static_cast<int>(i));  // in the stage's own order
    op_phase_.push_back(rank_phase(ops[i].phase));
  }
  const size_t ranks = static_cast<size_t>(dp_) * S_;
  pending_.assign(ranks, {});
  pending_head_.assign(ranks, 0);
}

void PipelineRun::begin_iteration(double t) {
  const size_t n = dag_.ops().size();
  iter_start_s_ = t;
  iter_end_s_ = t;
  end_.assign(static_cast<size_t>(dp_) * n, std::numeric_limits<double>::quiet_NaN());
  next_.assign(static_cast<size_t>(dp_) * S_, 0);
  unscheduled_ = static_cast<int>(static_cast<size_t>(dp_) * n);
}

void PipelineRun::schedule_ready(double until) {
  const auto& ops = dag_.ops();
  const size_t n = ops.size();
  for (bool moved = true; moved;) {
    moved = false;
    for (int p = 0; p < dp_; ++p) {
      double* end = end_.data() + static_cast<size_t>(p) * n;
      for (int s = 0; s < S_; ++s) {
        const size_t k = static_cast<size_t>(p) * S_ + s;
        const std::vector<int>& seq = stage_ops_[s];
        size_t& nx = next_[k];
        while (nx < seq.size()) {
          const pipeline::OneFOneB::Op& op = ops[seq[nx]];
          double start = iter_start_s_;
          if (op.prev >= 0) start = std::max(start, end[op.prev]);  // started: the stage's order
          if (op.dep >= 0) {
            if (std::isnan(end[op.dep])) break;  // the neighbour has not started it
            start = std::max(start, end[op.dep]);
          }
          if (start >= until) break;  // starts in a later window
          double factor = 1;
          for (const auto& st : stragglers_) {
            if (st.pipeline == p && (st.stage < 0 || st.stage == s) && start >= st.start_s &&
                start < st.end_s)
              factor *= st.factor;
          }
          const double work =
              op.instr == pipeline::Instr::kForward ? work_[s].forward_s : work_[s].backward_s;
          const double e = start + work * rate_slow_[k] * factor;
          end[seq[nx]] = e;
          pending_[k].push_back({start, e, rate_w_[k]});
          iter_end_s_ = std::max(iter_end_s_, e);
          --unscheduled_;
          ++nx;
          moved = true;
        }
      }
    }
  }
}

int PipelineRun::advance(double t0, double dt, std::span<const double> slow,
                         std::span<const double> compute_w, std::span<double> energy_j,
                         std::span<double> busy_s) {
  const size_t ranks = static_cast<size_t>(dp_) * S_;
  rate_slow_.assign(slow.begin(), slow.end());
  rate_w_.assign(compute_w.begin(), compute_w.end());
  const double t1 = t0 + dt;
  if (!started_) {
    started_ = true;
    begin_iteration(t0);
  }
  int done = 0;
  for (;;) {
    schedule_ready(t1);
    if (unscheduled_ > 0 || iter_end_s_ > t1 + 1e-9) break;
    ++done;  // every pipeline's last op ended: the all-reduce, then the next iteration
    begin_iteration(iter_end_s_);
  }
  for (size_t k = 0; k < ranks; ++k) {
    std::vector<Interval>& q = pending_[k];
    size_t& h = pending_head_[k];
    double busy = 0, e = 0;
    for (size_t i = h; i < q.size() && q[i].start < t1; ++i) {
      const double ov = std::min(q[i].end, t1) - std::max(q[i].start, t0);
      if (ov > 0) {
        busy += ov;
        e += ov * q[i].power_w;
      }
    }
    while (h < q.size() && q[h].end <= t1) ++h;
    if (h > 64) {
      q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(h));
      h = 0;
    }
    energy_j[k] += e + blocking_w_ * std::max(0.0, dt - busy);
    busy_s[k] += busy;
  }
  now_s_ = t1;
  return done;
}

RankPhase PipelineRun::phase(size_t k) const {
  if (!started_ || S_ < 1) return RankPhase::kWarmup;
  const size_t s = k % static_cast<size_t>(S_), p = k / static_cast<size_t>(S_);
  const std::vector<int>& seq = stage_ops_[s];
  const size_t nx = next_[k];
  const double* end = end_.data() + p * dag_.ops().size();
  if (nx > 0 && end[seq[nx - 1]] > now_s_) return op_phase_[seq[nx - 1]];  // running
  if (nx < seq.size()) return op_phase_[seq[nx]];                          // waiting for it
  return RankPhase::kCooldown;  // done, waiting at the all-reduce
}

}  // namespace fw::sim

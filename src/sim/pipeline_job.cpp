#include "sim/pipeline_job.hpp"

#include <algorithm>
#include <cmath>

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
  return out;
}

}  // namespace fw::sim

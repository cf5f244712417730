#include "controllers/frontier_controller.hpp"

#include <algorithm>
#include <cmath>

namespace fw {
namespace {

const pipeline::ClockPoint* point_at(const pipeline::InstrProfile& p, double mhz) {
  for (const auto& pt : p.points)
    if (std::abs(pt.freq_mhz - mhz) < 1e-6) return &pt;
  return p.points.empty() ? nullptr : &p.points.front();
}

pipeline::PlanOptions plan_options(const FrontierConfig& c, double factor) {
  pipeline::PlanOptions o;
  o.microbatches = c.microbatches;
  o.tp = 1;
  o.global_batch = c.microbatches * c.dp;
  o.slowdown_max = c.slowdown_max;
  o.straggler_factor = factor;
  o.blocking_w = c.blocking_w;
  return o;
}

}  // namespace

std::vector<double> FrontierController::caps_for(
    const FrontierConfig& cfg,
    const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& m, double time_s,
    double max_cap_w) {
  std::vector<double> caps;
  for (size_t s = 0; s < m.size(); ++s) {
    const pipeline::CapSetting& set = m[s][0];  // constant mode: every phase alike
    if (set.uncapped) {
      caps.push_back(max_cap_w);
      continue;
    }
    const auto* f =
        point_at(cfg.profile.at(static_cast<int>(s), pipeline::Instr::kForward), set.forward_mhz);
    const auto* b =
        point_at(cfg.profile.at(static_cast<int>(s), pipeline::Instr::kBackward), set.backward_mhz);
    double w = set.cap_w;
    if (cfg.average_over_iteration && f && b && time_s > 0) {
      const double busy = cfg.microbatches * (f->time_s + b->time_s);
      const double e = cfg.microbatches * (f->energy_j + b->energy_j);
      w = (e + cfg.blocking_w * std::max(0.0, time_s - busy)) / time_s;
    }
    caps.push_back(std::min(max_cap_w, w / (1 - cfg.margin_frac)));
  }
  return caps;
}

Result<FrontierController> FrontierController::create(const FrontierConfig& cfg) {
  if (cfg.profile.num_stages() < 1) return Status::InvalidArgument("frontier: empty profile");
  if (cfg.dp < 1 || cfg.microbatches < 1 || !(cfg.blocking_w > 0)) {
    return Status::InvalidArgument("frontier: needs dp >= 1, microbatches >= 1, blocking_w > 0");
  }
  FrontierController c(cfg);
  FW_ASSIGN_OR_RETURN(c.base_, pipeline::plan_pipeline(cfg.profile, plan_options(cfg, 1)));
  c.base_caps_w_ = caps_for(cfg, c.base_.constant.stages, c.base_.constant.pipeline_time_s, 1e9);
  return c;
}

void FrontierController::reset(const PlantInfo& info) {
  n_gpus_ = info.gpus.size();
  gpus_.clear();
  if (cfg_.job >= 0 && static_cast<size_t>(cfg_.job) < info.jobs.size())
    gpus_ = info.jobs[cfg_.job].gpus;
  max_cap_w_ = 1e9;
  for (int g : gpus_)
    if (static_cast<size_t>(g) < n_gpus_) max_cap_w_ = std::min(max_cap_w_, info.gpus[g].max_cap_w);
  pending_ = false;
  last_steps_ = -1;
  settled_at_s_ = 0;
  util_sum_.assign(gpus_.size(), 0.0);
  util_n_ = 0;
  first_boundary_t_ = -1;
  ref_step_s_ = 0;
  factor_ = 1;
  straggler_ = -1;
  replans_ = 0;
  want(-1, {});
}

void FrontierController::want(int straggler, const std::vector<double>& other_caps) {
  wanted_.assign(n_gpus_, kUnset);
  const size_t S = base_caps_w_.size();
  for (size_t k = 0; k < gpus_.size(); ++k) {
    const size_t p = k / S, s = k % S;
    const bool other = straggler >= 0 && static_cast<int>(p) != straggler && !other_caps.empty();
    const double w = std::min(max_cap_w_, other ? other_caps[s] : base_caps_w_[s]);
    if (static_cast<size_t>(gpus_[k]) < n_gpus_) wanted_[gpus_[k]] = w;
  }
  pending_ = true;
}

Command FrontierController::update(const Observation& obs) {
  Command c;
  const Snapshot& snap = obs.latest();
  const size_t S = base_caps_w_.size();
  if (gpus_.empty() || static_cast<size_t>(cfg_.job) >= snap.jobs.size()) return c;
  const JobReading& jr = snap.jobs[cfg_.job];
  if (jr.phase == Phase::kIdle) return c;
  // Step boundary: the job's first busy sample, or its step count grew.
  const bool boundary = last_steps_ < 0 || jr.steps_total > last_steps_;
  last_steps_ = jr.steps_total;
  if (pending_ && boundary) {
    c.power_cap_w = wanted_;
    pending_ = false;
    settled_at_s_ = obs.time_s + cfg_.settle_s;
    std::fill(util_sum_.begin(), util_sum_.end(), 0.0);
    util_n_ = 0;
    first_boundary_t_ = -1;
    return c;
  }
  if (pending_ || obs.time_s < settled_at_s_) return c;
  if (boundary) {
    if (first_boundary_t_ < 0) {
      first_boundary_t_ = obs.time_s;
      first_boundary_steps_ = jr.steps_total;
    }
    last_boundary_t_ = obs.time_s;
    last_boundary_steps_ = jr.steps_total;
  }
  for (size_t k = 0; k < gpus_.size(); ++k) {
    const int g = gpus_[k];
    if (static_cast<size_t>(g) < snap.gpus.size()) util_sum_[k] += snap.gpus[g].sm_util;
  }
  ++util_n_;
  if (obs.time_s < settled_at_s_ + cfg_.measure_s || cfg_.dp < 2) return c;
  // Each pipeline's activity against the others', stage by stage.
  const int dp = static_cast<int>(gpus_.size() / S);
  std::vector<double> ratio(dp, 1.0);
  for (int p = 0; p < dp; ++p) {
    double r = 0;
    for (size_t s = 0; s < S; ++s) {
      double others = 0;
      for (int q = 0; q < dp; ++q)
        if (q != p) others += util_sum_[q * S + s];
      others /= dp - 1;
      r += others > 0 ? util_sum_[p * S + s] / others : 1.0;
    }
    ratio[p] = r / static_cast<double>(S);
  }
  const double step_s =
      last_boundary_steps_ > first_boundary_steps_
          ? (last_boundary_t_ - first_boundary_t_) / (last_boundary_steps_ - first_boundary_steps_)
          : 0.0;
  std::fill(util_sum_.begin(), util_sum_.end(), 0.0);
  util_n_ = 0;
  first_boundary_t_ = -1;
  settled_at_s_ = obs.time_s;  // next measurement over the next measure_s
  const int top = static_cast<int>(std::max_element(ratio.begin(), ratio.end()) - ratio.begin());
  if (straggler_ < 0 && ratio[top] <= 1 + cfg_.threshold && step_s > 0) ref_step_s_ = step_s;
  if (straggler_ >= 0 && ratio[straggler_] < 1 - cfg_.threshold) {  // recovered
    straggler_ = -1;
    factor_ = 1;
    ++replans_;
    want(-1, {});
    return c;
  }
  if (ratio[top] > 1 + cfg_.threshold && (straggler_ < 0 || top == straggler_)) {
    // F from the step time against the reference under the base plan (the straggler keeps the
    // base caps, so its iteration is F times as long); from the activity ratio when no
    // reference was measured (a straggler from the start). The ratio overstates F where caps
    // bound the iteration-average power: the waiting pipelines then compute faster.
    const double f = std::clamp(
        ref_step_s_ > 0 && step_s > 0 ? step_s / ref_step_s_ : factor_ * ratio[top], 1.0, 100.0);
    if (straggler_ == top && std::abs(f - factor_) <= cfg_.threshold * factor_) return c;
    auto plan = pipeline::plan_pipeline(cfg_.profile, plan_options(cfg_, f));
    if (!plan.ok()) return c;  // keep what is in force
    straggler_ = top;
    factor_ = f;
    ++replans_;
    want(top, caps_for(cfg_, plan->constant.others, plan->constant.others_time_s, max_cap_w_));
  }
  return c;
}

}  // namespace fw

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

const pipeline::ClockPoint* fastest(const pipeline::InstrProfile& p) {
  const pipeline::ClockPoint* best = nullptr;
  for (const auto& pt : p.points)
    if (!best || pt.freq_mhz > best->freq_mhz) best = &pt;
  return best;
}

// Power of one instruction's op at `mhz`, interpolated between the profile's points (the
// nearest point outside their range).
double op_power_at(const pipeline::InstrProfile& p, double mhz, double& time_s) {
  const pipeline::ClockPoint* lo = nullptr;
  const pipeline::ClockPoint* hi = nullptr;
  for (const auto& pt : p.points) {
    if (pt.freq_mhz <= mhz && (!lo || pt.freq_mhz > lo->freq_mhz)) lo = &pt;
    if (pt.freq_mhz >= mhz && (!hi || pt.freq_mhz < hi->freq_mhz)) hi = &pt;
  }
  if (!lo) lo = hi;
  if (!hi) hi = lo;
  if (!lo || !(lo->time_s > 0) || !(hi->time_s > 0)) {
    time_s = 0;
    return 0;
  }
  const double u =
      hi->freq_mhz > lo->freq_mhz ? (mhz - lo->freq_mhz) / (hi->freq_mhz - lo->freq_mhz) : 0.0;
  time_s = lo->time_s + u * (hi->time_s - lo->time_s);
  return lo->power_w() + u * (hi->power_w() - lo->power_w());
}

// The rank phase (0 warm-up, 1 steady, 2 cool-down) of a planner phase slot: fill is part of
// warm-up and drain of cool-down (the planner's three segments; sim::RankPhase).
int rank_phase_of(int slot) {
  const auto p = static_cast<pipeline::Phase>(slot);
  if (p == pipeline::Phase::kFill || p == pipeline::Phase::kWarmup) return 0;
  if (p == pipeline::Phase::kSteady) return 1;
  return 2;
}

pipeline::PlanOptions plan_options(const FrontierConfig& c, double factor) {
  pipeline::PlanOptions o;
  o.segments = c.schedule ? 3 : 5;
  o.microbatches = c.microbatches;
  o.tp = 1;
  o.global_batch = c.microbatches * c.dp;
  o.slowdown_max = c.slowdown_max;
  o.straggler_factor = factor;
  o.blocking_w = c.blocking_w;
  return o;
}

}  // namespace

double FrontierController::compute_w_at(size_t stage, double mhz) const {
  const int s = static_cast<int>(stage);
  if (s >= cfg_.profile.num_stages() || !std::isfinite(mhz)) return 0;
  double tf = 0, tb = 0;
  const double pf = op_power_at(cfg_.profile.at(s, pipeline::Instr::kForward), mhz, tf);
  const double pb = op_power_at(cfg_.profile.at(s, pipeline::Instr::kBackward), mhz, tb);
  return tf + tb > 0 ? (pf * tf + pb * tb) / (tf + tb) : 0.0;
}

void FrontierController::BusyWindow::start(const Snapshot& snap, const std::vector<int>& gpus) {
  t0_s = snap.time_s;
  on = true;
  for (size_t k = 0; k < gpus.size(); ++k) {
    const int g = gpus[k];
    e0_j[k] = static_cast<size_t>(g) < snap.gpus.size() ? snap.gpus[g].energy_j : kUnset;
    power_sum_w[k] = 0;
    clock_sum_mhz[k] = 0;
  }
  n = 0;
}

void FrontierController::BusyWindow::add(const Snapshot& snap, const std::vector<int>& gpus) {
  for (size_t k = 0; k < gpus.size(); ++k) {
    const int g = gpus[k];
    if (static_cast<size_t>(g) >= snap.gpus.size()) continue;
    const GpuReading& r = snap.gpus[g];
    power_sum_w[k] += std::isfinite(r.power_w) ? r.power_w : 0.0;
    clock_sum_mhz[k] += std::isfinite(r.sm_clock_mhz) ? r.sm_clock_mhz : 0.0;
  }
  ++n;
}

void FrontierController::busy_over(const BusyWindow& w, const Snapshot& snap,
                                   std::vector<double>& out) const {
  const size_t S = base_caps_w_.size();
  const double span_s = snap.time_s - w.t0_s;
  for (size_t k = 0; k < gpus_.size(); ++k) {
    out[k] = 0;
    const int g = gpus_[k];
    if (w.n < 1 || static_cast<size_t>(g) >= snap.gpus.size()) continue;
    const double e1 = snap.gpus[g].energy_j;
    double mean_w = w.power_sum_w[k] / w.n;
    if (span_s >= 1 && std::isfinite(w.e0_j[k]) && std::isfinite(e1) && e1 > w.e0_j[k])
      mean_w = (e1 - w.e0_j[k]) / span_s;
    const double pc = compute_w_at(k % S, w.clock_sum_mhz[k] / w.n);
    if (pc > cfg_.blocking_w + 1)
      out[k] = std::max(0.0, mean_w - cfg_.blocking_w) / (pc - cfg_.blocking_w);
  }
}

double PhaseTable::max_cap_over(size_t s, double a, double b, double scale) const {
  const double T = time_s * scale;
  if (s >= caps_w.size() || !(T > 0)) return 0;
  const double x[4] = {0, steady_s[s] * scale, cool_s[s] * scale, T};
  double w = 0;
  for (double k = std::floor(a / T); k * T <= b; k += 1) {
    for (int ph = 0; ph < 3; ++ph) {
      const double lo = k * T + x[ph], hi = k * T + x[ph + 1];
      if (hi > lo && lo <= b && hi > a) w = std::max(w, caps_w[s][ph]);
    }
  }
  return w;
}

PhaseTable FrontierController::table_for(
    const FrontierConfig& cfg,
    const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& m, double time_s,
    double max_cap_w) {
  PhaseTable t;
  const int S = static_cast<int>(m.size());
  if (S < 1) return t;
  const pipeline::OneFOneB dag(S, cfg.microbatches);
  std::vector<double> d(static_cast<size_t>(S) * 2 * pipeline::kPhases, 0.0), end;
  std::vector<double> e_op(d.size(), 0.0);
  for (int s = 0; s < S; ++s) {
    for (int k = 0; k < 2; ++k) {
      const auto instr = static_cast<pipeline::Instr>(k);
      const pipeline::InstrProfile& prof = cfg.profile.at(s, instr);
      for (int ph = 0; ph < pipeline::kPhases; ++ph) {
        const pipeline::CapSetting& set = m[s][ph];
        const pipeline::ClockPoint* pt =
            set.uncapped ? fastest(prof)
                         : point_at(prof, k == 0 ? set.forward_mhz : set.backward_mhz);
        if (!pt) continue;
        const int slot = pipeline::OneFOneB::slot(s, instr, static_cast<pipeline::Phase>(ph));
        d[slot] = pt->time_s;
        e_op[slot] = pt->energy_j;
      }
    }
  }
  const double t_dag = dag.iteration_time(d.data(), end);
  t.time_s = time_s > 0 ? time_s : t_dag;
  t.caps_w.assign(static_cast<size_t>(S), {max_cap_w, max_cap_w, max_cap_w});
  t.steady_s.assign(static_cast<size_t>(S), 0.0);
  t.cool_s.assign(static_cast<size_t>(S), 0.0);
  std::vector<double> first_steady(S, -1), first_cool(S, -1), last_end(S, 0);
  const auto& ops = dag.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const int s = ops[i].stage;
    const int slot = pipeline::OneFOneB::slot(s, ops[i].instr, ops[i].phase);
    const double start = end[i] - d[slot];
    const int rp = rank_phase_of(static_cast<int>(ops[i].phase));
    if (rp == 1 && first_steady[s] < 0) first_steady[s] = start;
    if (rp == 2 && first_cool[s] < 0) first_cool[s] = start;
    last_end[s] = std::max(last_end[s], end[i]);
  }
  for (int s = 0; s < S; ++s) {
    t.steady_s[s] = std::max(0.0, first_steady[s]);  // no warm-up (last stage): from 0
    t.cool_s[s] = first_cool[s] >= 0 ? first_cool[s] : last_end[s];  // none: when it is done
    // The stage's planned busy share of the iteration, and each phase's compute power.
    double busy = 0;
    std::array<double, 3> e{}, tt{};
    std::array<bool, 3> capped{};
    for (int k = 0; k < 2; ++k) {
      for (int ph = 0; ph < pipeline::kPhases; ++ph) {
        const int n =
            dag.count(s, static_cast<pipeline::Instr>(k), static_cast<pipeline::Phase>(ph));
        const int slot = pipeline::OneFOneB::slot(s, static_cast<pipeline::Instr>(k),
                                                  static_cast<pipeline::Phase>(ph));
        busy += n * d[slot];
        const int rp = rank_phase_of(ph);
        e[rp] += n * e_op[slot];
        tt[rp] += n * d[slot];
        if (n > 0 && !m[s][ph].uncapped) capped[rp] = true;
      }
    }
    const double share = t.time_s > 0 ? std::min(1.0, busy / t.time_s) : 1.0;
    for (int rp = 0; rp < 3; ++rp) {
      if (!(tt[rp] > 0) || !capped[rp]) continue;  // no ops (it waits) or uncapped: max
      const double pc = e[rp] / tt[rp];
      const double w = cfg.average_over_iteration ? pc * share + cfg.blocking_w * (1 - share) : pc;
      t.caps_w[s][rp] = std::min(max_cap_w, w / (1 - cfg.margin_frac));
    }
    // A phase without ops (the last stage's warm-up and cool-down: it waits) keeps the
    // steady cap (no clock to set; no switch for nothing).
    for (int rp : {0, 2})
      if (!(tt[rp] > 0)) t.caps_w[s][rp] = t.caps_w[s][1];
  }
  return t;
}

std::vector<double> FrontierController::caps_for(
    const FrontierConfig& cfg,
    const std::vector<std::array<pipeline::CapSetting, pipeline::kPhases>>& m, double time_s,
    double max_cap_w, int phase) {
  std::vector<double> caps;
  for (size_t s = 0; s < m.size(); ++s) {
    const pipeline::CapSetting& set = m[s][phase];  // constant mode: every phase alike
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
  if (cfg.schedule) {
    c.base_table_ = table_for(cfg, c.base_.schedule.stages, c.base_.schedule.pipeline_time_s, 1e9);
  }
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
  std::vector<BusyWindow*> ws = {&window_};
  for (BusyWindow& w : step_windows_) ws.push_back(&w);
  for (BusyWindow* w : ws) {
    w->e0_j.assign(gpus_.size(), kUnset);
    w->power_sum_w.assign(gpus_.size(), 0.0);
    w->clock_sum_mhz.assign(gpus_.size(), 0.0);
    w->n = 0;
    w->on = false;
  }
  busy_.assign(gpus_.size(), 0.0);
  step_boundaries_ = 0;
  strag_ref_act_ = -1;
  quick_releases_ = 0;
  first_boundary_t_ = -1;
  ref_step_s_ = 0;
  factor_ = 1;
  straggler_ = -1;
  replans_ = 0;
  step_start_s_ = -1;
  written_.assign(gpus_.size(), kUnset);
  table_in_force_ = false;
  other_table_ = {};
  want(-1, {});
}

Command FrontierController::write_schedule(const Observation& obs) {
  Command c;
  if (step_start_s_ < 0 || base_table_.caps_w.empty()) return c;
  const double t = obs.time_s - step_start_s_;
  const size_t S = base_caps_w_.size();
  std::vector<double> caps(n_gpus_, kUnset);
  bool any = false;
  for (size_t k = 0; k < gpus_.size(); ++k) {
    const int p = static_cast<int>(k / S);
    const size_t s = k % S;
    const bool other = straggler_ >= 0 && p != straggler_ && !other_table_.caps_w.empty();
    const PhaseTable& tb = other ? other_table_ : base_table_;
    const double scale = straggler_ >= 0 && p == straggler_ ? factor_ : 1.0;
    const double w =
        std::min(max_cap_w_, tb.max_cap_over(s, t + cfg_.lead_down_s, t + cfg_.lead_up_s, scale));
    if (std::isfinite(written_[k]) && std::abs(w - written_[k]) < 0.5) continue;
    if (static_cast<size_t>(gpus_[k]) >= n_gpus_) continue;
    caps[gpus_[k]] = w;
    written_[k] = w;
    any = true;
  }
  if (any) c.power_cap_w = std::move(caps);
  return c;
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
  // Schedule mode: the step began between the last sample and this one (half a period back).
  if (cfg_.schedule && boundary)
    step_start_s_ = std::max(0.0, obs.time_s - 0.5 * obs.sample_period_s);
  if (pending_ && boundary) {
    if (cfg_.schedule) {
      table_in_force_ = true;
      std::fill(written_.begin(), written_.end(), kUnset);
      c = write_schedule(obs);
    } else {
      c.power_cap_w = wanted_;
    }
    pending_ = false;
    settled_at_s_ = obs.time_s + cfg_.settle_s;
    window_.n = 0;  // restarted at the first sample after settling
    for (BusyWindow& w : step_windows_) w.on = false;
    step_boundaries_ = 0;  // from the first boundary after settling
    strag_ref_act_ = -1;   // measured again under the plan now written
    first_boundary_t_ = -1;
    return c;
  }
  if (cfg_.schedule && table_in_force_) c = write_schedule(obs);
  if (pending_ || obs.time_s < settled_at_s_) return c;
  if (boundary) {
    if (first_boundary_t_ < 0) {
      first_boundary_t_ = obs.time_s;
      first_boundary_steps_ = jr.steps_total;
    }
    last_boundary_t_ = obs.time_s;
    last_boundary_steps_ = jr.steps_total;
  }
  const int dp = static_cast<int>(gpus_.size() / S);
  // Pipeline p's busy share against the others', stage by stage, over the sums `u`.
  auto ratio_of = [&](int p, const std::vector<double>& u) {
    double r = 0;
    for (size_t s = 0; s < S; ++s) {
      double others = 0;
      for (int q = 0; q < dp; ++q)
        if (q != p) others += u[q * S + s];
      others /= dp - 1;
      r += others > 0 ? u[p * S + s] / others : 1.0;
    }
    return r / static_cast<double>(S);
  };
  // Release, checked at every step boundary on the last kReleaseSteps whole steps: the
  // straggler's own busy share (the share of time its GPUs compute, mean over its stages)
  // against its level over the first such steps under the straggler plan (one step's energy
  // span, its ends seen at the sample period, moved the share by more than the threshold). A
  // recovered straggler does its work in 1/F of the time while the iteration keeps the others'
  // (slowed) pace, so its activity drops by ~1 − 1/F. (Its activity *ratio* to the others does not
  // tell: the others, slowed to its pace, compute as much of the iteration as it does — releasing
  // on that ratio released and re-found the straggler every ~40 s.)
  if (boundary) {
    BusyWindow& w = step_windows_[step_boundaries_ % kReleaseSteps];
    if (step_boundaries_ >= kReleaseSteps && w.n > 0 && straggler_ >= 0 && dp >= 2) {
      busy_over(w, snap, busy_);
      double a = 0;
      for (size_t s = 0; s < S; ++s) a += busy_[straggler_ * S + s];
      a /= static_cast<double>(S);
      if (strag_ref_act_ < 0) {
        strag_ref_act_ = a;
      } else if (a < strag_ref_act_ * (1 - cfg_.threshold)) {  // recovered
        straggler_ = -1;
        factor_ = 1;
        other_table_ = {};
        ++replans_;
        ++quick_releases_;
        want(-1, {});
        return c;
      }
    }
    w.start(snap, gpus_);  // evaluated kReleaseSteps boundaries from now
    ++step_boundaries_;
  }
  if (window_.n == 0) window_.start(snap, gpus_);
  window_.add(snap, gpus_);
  for (BusyWindow& w : step_windows_)
    if (w.on) w.add(snap, gpus_);
  if (obs.time_s < settled_at_s_ + cfg_.measure_s || dp < 2) return c;
  // Each pipeline's busy share against the others', stage by stage.
  busy_over(window_, snap, busy_);
  std::vector<double> ratio(dp, 1.0);
  for (int p = 0; p < dp; ++p) ratio[p] = ratio_of(p, busy_);
  const double step_s =
      last_boundary_steps_ > first_boundary_steps_
          ? (last_boundary_t_ - first_boundary_t_) / (last_boundary_steps_ - first_boundary_steps_)
          : 0.0;
  window_.n = 0;
  first_boundary_t_ = -1;
  settled_at_s_ = obs.time_s;  // next measurement over the next measure_s
  const int top = static_cast<int>(std::max_element(ratio.begin(), ratio.end()) - ratio.begin());
  if (straggler_ < 0 && ratio[top] <= 1 + cfg_.threshold && step_s > 0) ref_step_s_ = step_s;
  if (ratio[top] > 1 + cfg_.threshold && (straggler_ < 0 || top == straggler_)) {
    // F from the step time against the reference under the base plan (the straggler keeps the
    // base caps, so its iteration is F times as long); from the busy-share ratio when no
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
    if (cfg_.schedule) {
      other_table_ = table_for(cfg_, plan->schedule.others, plan->schedule.time_s, max_cap_w_);
    }
    want(top, caps_for(cfg_, plan->constant.others, plan->constant.others_time_s, max_cap_w_));
  }
  return c;
}

}  // namespace fw

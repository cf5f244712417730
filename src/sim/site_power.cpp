#include "sim/site_power.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace fw::sim {
namespace {

constexpr double kEps = 1e-12;

std::string site_num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

Load duty_scaled(const Load& l, double duty) { return {l.u * duty, l.m * duty, l.c}; }

// Lower-tail inverse normal CDF (Acklam), p in (0, 1).
double inverse_normal_cdf(double p) {
  static constexpr double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                 -2.759285104469687e+02, 1.383577518672690e+02,
                                 -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double b[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                 -1.556989798598866e+02, 6.680131188771972e+01,
                                 -1.328068155288572e+01};
  static constexpr double c[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                 -2.400758277161838e+00, -2.549732539343734e+00,
                                 4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double d[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                 2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double p_low = 0.02425;
  if (p < p_low) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p <= 1 - p_low) {
    const double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
  }
  const double q = std::sqrt(-2 * std::log1p(-p));
  return -(((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
         ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
}

}  // namespace

double normal_upper_quantile(double q_upper) { return -inverse_normal_cdf(q_upper); }

Status validate(const SiteSpec& s) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument(field + ": " + why);
  };
  if (s.gpu == nullptr) return bad("gpu", "no GPU power model");
  if (s.job.tp < 1) return bad("job.tp", "must be >= 1");
  if (s.gpus < 1 || s.gpus % s.job.tp != 0) {
    return bad("gpus", site_num(static_cast<double>(s.gpus)) +
                           " is not a positive multiple of job.tp " + std::to_string(s.job.tp));
  }
  if (s.representatives < 1 || s.representatives > s.ranks()) {
    return bad("representatives", "must be 1.." + std::to_string(s.ranks()) + " (the ranks)");
  }
  if (!(s.dt_s >= 0.001 && s.dt_s <= 0.1)) return bad("sim.dt_s", "must be 0.001..0.1");
  const double ratio = s.output_period_s / s.dt_s;
  if (!(ratio >= 1 - 1e-9) || std::fabs(ratio - std::round(ratio)) > 1e-6) {
    return bad("sim.output_period_s", "must be a whole number (>= 1) of sim.dt_s");
  }
  if (!(s.duration_s > 0 && s.duration_s <= 1e6)) return bad("duration_s", "must be 0..1e6");
  if (!(s.job.start_s >= 0 && s.job.start_s < s.duration_s)) {
    return bad("job.start_s", "must be within [0, duration_s)");
  }
  if (!(s.job.end_s > s.job.start_s)) return bad("job.end_s", "must be after job.start_s");
  if (!(s.job.model.iter_s > 0)) return bad("job.workload", "preset has no iteration");
  return Status::Ok();
}

Status validate(const SiteSpec& s, const SiteMitigations& m) {
  FW_RETURN_IF_ERROR(validate(s));
  if (!(m.cap_frac > 0 && m.cap_frac <= 1))
    return Status::InvalidArgument("cap_frac: must be in (0, 1]");
  if (m.smoothing.enabled) {
    if (s.smoothing == nullptr) {
      return Status::InvalidArgument("smoothing: GPU model " + s.gpu_model +
                                     " has no power smoothing (set smoothing_model: one of " +
                                     smoothing_capability_names() + ")");
    }
    FW_RETURN_IF_ERROR(validate(m.smoothing, *s.smoothing).with_context("smoothing"));
  }
  if (m.fill.enabled && !(m.fill.target_frac > 0 && m.fill.target_frac <= 1)) {
    return Status::InvalidArgument("fill.target_frac: must be in (0, 1]");
  }
  const double st = m.stagger.stagger_s;
  if (!(st >= 0) || !std::isfinite(st)) return Status::InvalidArgument("stagger_s: must be >= 0");
  if (st > 0 && !(s.job.start_s + st < std::min(s.job.end_s, s.duration_s))) {
    return Status::InvalidArgument("stagger_s: " + site_num(st) +
                                   " s leaves no training before the job ends");
  }
  if (!(s.fill_cost.slowdown >= 0 && s.fill_cost.slowdown < 1)) {
    return Status::InvalidArgument("fill_cost.slowdown: must be in [0, 1)");
  }
  return Status::Ok();
}

double mean_training_power_w(const SiteSpec& spec, double cap_w) {
  const PretrainModel& pm = spec.job.model;
  const double setpoint = cap_w * (1.0 - spec.firmware.margin_frac);
  double e = 0, t = 0;
  for (int k = 0; k < 5; ++k) {
    if (pm.share[k] <= 0) continue;
    const double x = clock_for_cap(*spec.gpu, pm.load[k], setpoint, 1.0);
    e += pm.share[k] * gpu_power_w(*spec.gpu, pm.load[k], x);
    t += pm.share[k];
  }
  return t > 0 ? e / t : spec.gpu->idle_ctx_w;
}

SiteSimulator::SiteSimulator(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed)
    : spec_(spec), m_(m), k_(firmware_coeffs(spec.firmware, spec.dt_s)) {
  total_steps_ = std::llround(spec_.duration_s / spec_.dt_s);
  steps_per_sample_ = static_cast<int>(std::lround(spec_.output_period_s / spec_.dt_s));
  train_start_s_ = spec_.job.start_s + m_.stagger.stagger_s;
  train_end_s_ = std::min(spec_.job.end_s, spec_.duration_s);
  const GpuPreset& g = *spec_.gpu;
  const double cap = std::clamp(m_.cap_frac * g.tdp_w, g.min_cap_w, g.max_cap_w);
  const Rng root = Rng::stream(seed, "site.rank");
  const int R = spec_.representatives;
  others_ = spec_.ranks() - R;
  ranks_.resize(static_cast<size_t>(R) + (others_ > 0 ? 1 : 0));
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    r.weight = static_cast<int>(i) < R ? spec_.gpus_per_representative() : 0.0;
    r.cap_w = cap;
    r.smoothing = m_.smoothing;
    r.fill = m_.fill;
    r.rng = root.child(i);
    r.power_w = g.idle_bare_w;
  }
  critical_rng_ = Rng::stream(seed, "site.critical");
  burn_w_ = mean_training_power_w(spec_, cap);
  run_.output_period_s = spec_.output_period_s;
  run_.train_start_s = train_start_s_;
  run_.train_end_s = train_end_s_;
  run_.nameplate_w = static_cast<double>(spec_.gpus) * g.tdp_w;
  accs_.resize(ranks_.size());
}

Load SiteSimulator::seg_load(Seg s) const {
  const PretrainModel& pm = spec_.job.model;
  switch (s) {
    case Seg::kFwd:
      return pm.load[0];
    case Seg::kBwd:
      return pm.load[1];
    case Seg::kA2a:
      return pm.load[2];
    case Seg::kAllReduce:
      return pm.load[3];
    case Seg::kOpt:
      return pm.load[4];
    case Seg::kCheckpoint:
      return spec_.job.checkpoint_load;
    case Seg::kWait:
      break;
  }
  return Load{};
}

double SiteSimulator::draw_multiplier(Rank& r, bool critical) {
  const double sigma = spec_.job.iter_jitter;
  if (sigma <= 0) return 1.0;
  if (!critical) return r.rng.lognormal(1.0, sigma);
  double u = critical_rng_.uniform();
  while (u <= 0) u = critical_rng_.uniform();
  const double q_upper = -std::expm1(std::log(u) / static_cast<double>(others_));
  return std::exp(sigma * normal_upper_quantile(std::max(q_upper, 1e-300)));
}

void SiteSimulator::begin_iteration(Rank& r) {
  const PretrainModel& pm = spec_.job.model;
  r.mult = draw_multiplier(r, r.weight == 0 && others_ > 0);
  r.seg = Seg::kFwd;
  r.left = pm.iter_s * pm.share[0] * r.mult;
}

void SiteSimulator::next_after_collective(Rank& r) {
  const PretrainModel& pm = spec_.job.model;
  if (r.seg == Seg::kAllReduce && ckpt_pending_) {
    r.seg = Seg::kCheckpoint;
    r.left = spec_.job.checkpoint_s;
    return;
  }
  r.seg = Seg::kOpt;
  r.left = pm.iter_s * pm.share[4];
}

void SiteSimulator::advance_rank(Rank& r, double t0, double t1, double x_eff, double ceiling_w,
                                 double rate, Piece& acc) {
  const GpuPreset& g = *spec_.gpu;
  const PretrainModel& pm = spec_.job.model;
  const ClockDuty fw_cd = clock_duty(g, x_eff);
  double t = t0;
  for (int guard = 0; t1 - t > kEps && guard < 1000; ++guard) {
    const Load load = seg_load(r.seg);
    // The clock for this piece: the firmware's, lowered further when the smoothing's ramp-up
    // ceiling binds (the work is held back so the GPU's draw stays under the ceiling).
    ClockDuty cd = fw_cd;
    if (std::isfinite(ceiling_w) && gpu_power_w(g, duty_scaled(load, cd.duty), cd.x) > ceiling_w) {
      cd = clock_duty(g, std::min(x_eff, effective_clock_for_cap(g, load, ceiling_w, x_eff)));
    }
    const Load sl = duty_scaled(load, cd.duty);
    const double p = gpu_power_w(g, sl, cd.x);
    double use = t1 - t;
    if (r.seg == Seg::kWait) {
      r.wait_power_w = p;
    } else if (r.seg == Seg::kAllReduce || r.seg == Seg::kCheckpoint) {
      use = std::min(use, r.left);
      r.left -= use;
    } else {
      const double speed = clock_speed(load.c, cd.x) * cd.duty * rate;
      use = std::min(use, r.left / speed);
      r.left -= use * speed;
    }
    acc.energy_j += p * use;
    acc.u_s += sl.u * use;
    acc.m_s += sl.m * use;
    acc.c_s += sl.c * use;
    t += use;
    if (r.seg == Seg::kWait || r.left > 1e-9) continue;
    switch (r.seg) {
      case Seg::kFwd:
        r.seg = Seg::kBwd;
        r.left = pm.iter_s * pm.share[1] * r.mult;
        break;
      case Seg::kBwd:
        if (pm.share[2] > 0) {
          r.seg = Seg::kA2a;
          r.left = pm.iter_s * pm.share[2] * r.mult;
          break;
        }
        [[fallthrough]];
      case Seg::kA2a:
        r.seg = Seg::kWait;
        r.wait_from_s = t;
        break;
      case Seg::kAllReduce:
      case Seg::kCheckpoint:
        next_after_collective(r);
        break;
      case Seg::kOpt:
        begin_iteration(r);
        break;
      case Seg::kWait:
        break;
    }
  }
}

void SiteSimulator::step() {
  const GpuPreset& g = *spec_.gpu;
  const double dt = spec_.dt_s;
  const double t0 = time_s(), t1 = t0 + dt, tm = t0 + 0.5 * dt;
  const bool training = t0 + 1e-9 >= train_start_s_ && t0 + 1e-9 < train_end_s_;
  const bool train_begins = training && t0 + 1e-9 < train_start_s_ + dt;
  const int R = spec_.representatives;
  const double S = m_.stagger.stagger_s;
  const double slot = S / R;
  // Pass 1: every rank's work up to t1, or to the barrier.
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    Piece& acc = accs_[i];
    acc = Piece{};
    const double ceiling = smoothing_ceiling_w(r.smoothing, r.sm, dt);
    if (!training) {
      if (t0 + 1e-9 >= train_end_s_) r.seg = Seg::kWait;  // the job stopped: no more work
      const ClockDuty cd = clock_duty(g, r.fw.x_eff);
      acc.energy_j = gpu_power_w(g, Load{}, cd.x) * dt;
      continue;
    }
    if (train_begins) begin_iteration(r);
    advance_rank(r, t0, t1, r.fw.x_eff, ceiling, work_rate(r), acc);
  }
  // The barrier: when every rank (the critical one included) waits, the all-reduce starts at
  // the last arrival; pass 2 runs each rank from there to t1.
  for (int guard = 0; training && guard < 100; ++guard) {
    double b = t0;
    bool all = true;
    for (const Rank& r : ranks_) {
      if (r.seg != Seg::kWait) {
        all = false;
        break;
      }
      b = std::max(b, r.wait_from_s);
    }
    if (!all) break;
    const PretrainModel& pm = spec_.job.model;
    const double ar_s = pm.iter_s * pm.share[3];
    if (b + ar_s <= train_end_s_ + 1e-9) {
      ++iterations_;
      run_.iteration_end_s.push_back(b + ar_s);
      ckpt_pending_ = spec_.job.checkpoint_every_iters > 0 &&
                      iterations_ % spec_.job.checkpoint_every_iters == 0;
    } else {
      ckpt_pending_ = false;
    }
    for (size_t i = 0; i < ranks_.size(); ++i) {
      Rank& r = ranks_[i];
      accs_[i].energy_j -= r.wait_power_w * (t1 - b);
      r.seg = Seg::kAllReduce;
      r.left = ar_s;
      advance_rank(r, b, t1, r.fw.x_eff, smoothing_ceiling_w(r.smoothing, r.sm, dt), work_rate(r),
                   accs_[i]);
    }
  }
  // Power of each rank's GPUs, the mitigations' burn, the site sum.
  double site_w = 0;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    const Piece& acc = accs_[i];
    // Share of the rank's GPUs holding the job: they join across the rank's slot
    // [start_s + i·slot, + slot) and leave across [end_s + i·slot, + slot) (slot 0: at once).
    const double join0 = spec_.job.start_s + static_cast<double>(i) * slot;
    const double leave0 = train_end_s_ + static_cast<double>(i) * slot;
    auto ramp = [&](double from) {
      if (slot <= 0) return tm >= from ? 1.0 : 0.0;
      return std::clamp((tm - from) / slot, 0.0, 1.0);
    };
    const double on = r.weight > 0 ? ramp(join0) * (1.0 - ramp(leave0)) : 1.0;
    const double work_w = std::max(g.idle_bare_w, acc.energy_j / dt);
    double fill_w = 0, level = 0;
    // Before training starts (no stagger), a fill written by a controller runs on the idle
    // GPU: the agent's pre-start fill (sim/site_plant.hpp); it holds no job, so no floor.
    const bool pre_fill =
        !training && t0 + 1e-9 < train_start_s_ && S <= 0 && r.fill.enabled && r.fill.before_start;
    if (training && r.fill.enabled) {
      level = r.fill.target_frac * g.tdp_w;
    } else if (!training && S > 0 && on > 0) {
      level = burn_w_;  // stagger: joined GPUs burn at the job's mean power
    } else if (pre_fill) {
      level = r.fill.target_frac * g.tdp_w;
    }
    const double fill_on = pre_fill ? 1.0 : on;
    const double base_w = pre_fill ? g.idle_bare_w : work_w;  // what the GPU draws besides
    if (level > base_w) {
      const double ceiling = smoothing_ceiling_w(r.smoothing, r.sm, dt);
      const double headroom =
          std::min(r.cap_w * (1.0 - spec_.firmware.margin_frac), ceiling) - base_w;
      fill_w = std::clamp(level - base_w, 0.0, std::max(0.0, headroom));
    }
    r.fill_active = fill_w > 0;
    const double natural = on * work_w + (1 - on) * g.idle_bare_w;
    const double draw = natural + fill_on * fill_w;
    const double floor = on * (r.smoothing.enabled ? r.smoothing.floor_frac * r.cap_w : 0.0);
    const double out = smoothing_step(r.smoothing, r.sm, draw, floor, dt);
    r.power_w = out;
    r.energy_j += out * dt;
    if (on > 0) {
      r.last = {acc.u_s / dt, acc.m_s / dt, acc.c_s / dt};
      firmware_step(g, spec_.firmware, k_, r.fw, r.last, r.cap_w, 0.0);
    } else {
      r.last = Load{};
    }
    const double w = r.weight;
    site_w += w * out;
    run_.natural_energy_j += w * natural * dt;
    run_.smoothing_burn_j += w * (out - draw) * dt;
    (training || pre_fill ? run_.fill_j : run_.stagger_burn_j) += w * fill_on * fill_w * dt;
  }
  sample_acc_w_ += site_w;
  ++step_;
  run_.steps += static_cast<int64_t>(ranks_.size());
  if (step_ % steps_per_sample_ == 0) {
    const double p = sample_acc_w_ / steps_per_sample_;
    run_.time_s.push_back(static_cast<double>(step_) * dt);
    run_.power_w.push_back(p);
    run_.energy_j += p * spec_.output_period_s;
    sample_acc_w_ = 0;
  }
}

void SiteSimulator::advance_to(double t_s) {
  const int64_t target =
      t_s < spec_.duration_s
          ? std::min(total_steps_, static_cast<int64_t>(std::floor(t_s / spec_.dt_s + 1e-9)))
          : total_steps_;
  while (step_ < target) step();
}

SiteRankReading SiteSimulator::reading(int rank) const {
  const Rank& r = ranks_[static_cast<size_t>(rank)];
  SiteRankReading out;
  out.energy_j = r.energy_j;
  out.power_w = r.power_w;
  out.cap_w = r.cap_w;
  out.clock_ratio = clock_duty(*spec_.gpu, r.fw.x_eff).x;
  out.load = r.last;
  const double t = time_s();
  if (t + 1e-9 < train_start_s_ || t + 1e-9 >= train_end_s_) {
    out.phase = Phase::kIdle;
  } else {
    switch (r.seg) {
      case Seg::kFwd:
        out.phase = Phase::kForward;
        break;
      case Seg::kBwd:
        out.phase = Phase::kBackward;
        break;
      case Seg::kA2a:
        out.phase = Phase::kAllToAll;
        break;
      case Seg::kWait:
      case Seg::kAllReduce:
        out.phase = Phase::kAllReduce;
        break;
      case Seg::kCheckpoint:
        out.phase = Phase::kCheckpoint;
        break;
      case Seg::kOpt:
        out.phase = Phase::kOptimizer;
        break;
    }
  }
  return out;
}

void SiteSimulator::set_cap_w(int rank, double cap_w) {
  const GpuPreset& g = *spec_.gpu;
  if (!std::isfinite(cap_w)) return;
  ranks_[static_cast<size_t>(rank)].cap_w = std::clamp(cap_w, g.min_cap_w, g.max_cap_w);
  if (others_ > 0) {
    double lowest = g.max_cap_w;
    for (int i = 0; i < spec_.representatives; ++i) lowest = std::min(lowest, ranks_[i].cap_w);
    ranks_.back().cap_w = lowest;
  }
}

double SiteSimulator::work_rate(const Rank& r) const {
  const bool slowed = r.fill.enabled && (!spec_.fill_cost.while_active || r.fill_active);
  return slowed ? 1.0 - spec_.fill_cost.slowdown : 1.0;
}

void SiteSimulator::set_smoothing(int rank, const SmoothingSettings& s) {
  // Turned on mid-run: the envelope starts at what the GPU draws now (not at the next step's
  // draw, which a fill written at the same time would lift at once).
  auto apply = [&s](Rank& r) {
    if (s.enabled && !r.smoothing.enabled) r.sm = SmoothingState{r.power_w, 0};
    r.smoothing = s;
  };
  apply(ranks_[static_cast<size_t>(rank)]);
  if (others_ > 0 && rank == 0) apply(ranks_.back());
}

void SiteSimulator::set_fill(int rank, const FillSettings& f) {
  ranks_[static_cast<size_t>(rank)].fill = f;
  if (others_ > 0 && rank == 0) ranks_.back().fill = f;
}

int64_t SiteSimulator::iterations_to_checkpoint() const {
  const int64_t every = spec_.job.checkpoint_every_iters;
  if (every <= 0) return 0;
  // The checkpoint's all-reduce under way (counted at its start): the checkpoint is next.
  if (ckpt_pending_ && ranks_[0].seg == Seg::kAllReduce) return 1;
  return every - iterations_ % every;
}

SiteRun SiteSimulator::finish() {
  run_.iterations = iterations_;
  run_.tokens = tokens();
  return std::move(run_);
}

SiteRun simulate_site(const SiteSpec& spec, const SiteMitigations& m, uint64_t seed) {
  SiteSimulator sim(spec, m, seed);
  sim.advance_to(spec.duration_s);
  return sim.finish();
}

}  // namespace fw::sim

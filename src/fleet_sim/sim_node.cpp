#include "fleet_sim/sim_node.hpp"

#include <algorithm>
#include <cmath>

namespace fw::fleet {

SimNode::SimNode(std::string name, const sim::Scenario& scenario, uint64_t seed, double pfi)
    : name_(std::move(name)), idle_scenario_(scenario), seed_(seed), pfi_(pfi) {
  for (auto& j : idle_scenario_.jobs) j.start_s = 1e12;  // never starts: the GPUs idle
  capped_ = ClusterBox(sim::make_cluster(scenario, seed));
  free_ = capped_;
  for (const GpuInfo& g : capped_->info().gpus) {
    min_cap_w_.push_back(g.min_cap_w);
    max_cap_w_.push_back(g.max_cap_w);
    caps_w_.push_back(g.default_cap_w);
  }
  for (const JobInfo& j : capped_->info().jobs) job_names_.push_back(j.name);
  // The simulated energy counters step every 100 ms of integration steps (sim/cluster.cpp).
  const double dt = scenario.sim.dt_s;
  counter_period_s_ = std::max(1.0, std::round(0.1 / dt)) * dt;
}

SimNode::SimNode(std::string name, CurveGpus gpus, uint64_t seed)
    : name_(std::move(name)), on_curve_(std::move(gpus)), seed_(seed) {
  const auto& c = on_curve_->curve();
  const studies::DrJobSpec& job = on_curve_->job();
  JobInfo j;
  j.name = job.name;
  j.kind = "curve";
  for (int g = 0; g < on_curve_->gpus(); ++g) {
    curve_info_.gpus.push_back({"curve:" + job.sweep_job, c.front().cap_w, c.back().cap_w,
                                c.back().cap_w, c.back().cap_w});
    min_cap_w_.push_back(c.front().cap_w);
    max_cap_w_.push_back(c.back().cap_w);
    caps_w_.push_back(c.back().cap_w);
    j.gpus.push_back(g);
  }
  curve_info_.jobs.push_back(j);
  job_names_.push_back(job.name);
  power_w_ = on_curve_->power_w();
  uncontrolled_w_ = on_curve_->uncontrolled_w();
  snap_.gpus.resize(caps_w_.size());
  snap_.jobs.resize(1);
  for (size_t g = 0; g < caps_w_.size(); ++g) {
    snap_.gpus[g].gpu = int(g);
    snap_.gpus[g].energy_j = 0;
  }
  fill_curve_snapshot();
}

// The curve plant's readings as the GPUs' and the job's (sim_node.hpp).
void SimNode::fill_curve_snapshot() {
  const double per_gpu = power_w_ / std::max<size_t>(1, caps_w_.size());
  const double dt = t_s_ - snap_.time_s;  // 0 at construction
  for (size_t g = 0; g < caps_w_.size(); ++g) {
    GpuReading& r = snap_.gpus[g];
    r.power_w = r.power_instant_w = per_gpu;
    r.energy_j += per_gpu * dt;
    r.cap_w = caps_w_[g];
  }
  snap_.time_s = t_s_;
  snap_.jobs[0].phase = paused_ ? Phase::kIdle : Phase::kForward;
  snap_.jobs[0].tokens_total = on_curve_->tokens();
}

double SimNode::min_w() const {
  double s = 0;
  for (double v : min_cap_w_) s += v;
  return s;
}

double SimNode::nameplate_w() const {
  double s = 0;
  for (double v : max_cap_w_) s += v;
  return s;
}

double SimNode::cap_w() const {
  double s = 0;
  for (double v : caps_w_) s += v;
  return s;
}

double SimNode::mean_power(const Snapshot& s, Meter& m, double t_s, double counter_period_s) {
  double p = 0;
  const bool first = m.energy_j.empty();
  m.energy_j.resize(s.gpus.size(), 0);
  // The counters hold the energy up to their last step, not up to t_s: a mean over the ticks'
  // own spans would read 2 or 3 counter steps per 0.25 s tick as 0.8x / 1.2x the power.
  t_s = std::floor(t_s / counter_period_s + 1e-9) * counter_period_s;
  const double dt = t_s - m.t_s;
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const GpuReading& g = s.gpus[i];
    if (std::isfinite(g.energy_j) && !first && dt > 0) {
      p += (g.energy_j - m.energy_j[i]) / dt;
    } else {
      p += std::isfinite(g.power_w) ? g.power_w : 0;
    }
    if (std::isfinite(g.energy_j)) m.energy_j[i] = g.energy_j;
  }
  m.t_s = t_s;
  return p;
}

Status SimNode::step(double t_s, double budget_w, bool pause) {
  const double per_gpu = budget_w / std::max(1, gpus());
  set_caps(std::vector<double>(caps_w_.size(), per_gpu));
  return advance(t_s, pause);
}

void SimNode::set_caps(const std::vector<double>& caps_w) {
  for (size_t i = 0; i < caps_w_.size() && i < caps_w.size(); ++i) {
    if (!std::isnan(caps_w[i])) caps_w_[i] = std::clamp(caps_w[i], min_cap_w_[i], max_cap_w_[i]);
  }
}

Status SimNode::advance(double t_s, bool pause) {
  if (!(t_s >= t_s_)) return Status::InvalidArgument("SimNode::advance: time went back");
  if (paused_ && !stopped_) paused_s_ += t_s - t_s_;
  pause = pause || stopped_;  // a stopped job's GPUs idle as a paused one's
  paused_ = pause;
  if (on_curve_) {
    double cap = 0;
    for (double v : caps_w_) cap += v;
    on_curve_->advance(t_s, cap / std::max<size_t>(1, caps_w_.size()), pause);
    power_w_ = on_curve_->power_w();
    uncontrolled_w_ = on_curve_->uncontrolled_w();
    tokens_ = on_curve_->tokens();
    tokens_free_ = on_curve_->tokens_free();
    t_s_ = t_s;
    fill_curve_snapshot();
    return Status::Ok();
  }
  Command c;
  c.power_cap_w = caps_w_;
  if (pause) {
    // The job stands still; the GPUs idle (an idle twin, stepped only while paused).
    if (!idle_) idle_ = ClusterBox(sim::make_cluster(idle_scenario_, seed_));
    FW_RETURN_IF_ERROR(idle_->write(c));
    FW_RETURN_IF_ERROR(idle_->read(t_s, snap_idle_));
    power_w_ = mean_power(snap_idle_, meter_idle_, t_s, counter_period_s_);
  } else {
    // The job's own time: the run time less the time it spent paused.
    FW_RETURN_IF_ERROR(capped_->write(c));
    FW_RETURN_IF_ERROR(capped_->read(t_s - paused_s_, snap_));
    power_w_ = mean_power(snap_, meter_, t_s - paused_s_, counter_period_s_);
    meter_idle_ = Meter{};
  }
  FW_RETURN_IF_ERROR(free_->read(t_s, snap_free_));
  // The energy counters step every 100 ms: a mean over less than that is the sensor's power.
  uncontrolled_w_ = mean_power(snap_free_, meter_free_, t_s, counter_period_s_);
  tokens_ = tokens_free_ = 0;
  for (const JobReading& j : snap_.jobs) tokens_ += j.tokens_total;
  for (const JobReading& j : snap_free_.jobs) tokens_free_ += j.tokens_total;
  t_s_ = t_s;
  return Status::Ok();
}

NodeRecord SimNode::record(double time_unix_s) const {
  NodeRecord r;
  r.node = name_;
  r.gpus = gpus();
  r.nameplate_w = nameplate_w();
  r.min_w = min_w();
  r.draw_w = std::max(0.0, power_w_);
  r.cap_w = cap_w();
  r.uncontrolled_w = std::clamp(uncontrolled_w_, 0.0, r.nameplate_w);
  if (on_curve_) r.paused_draw_w = 0;  // the curve plant's paused jobs draw 0 W
  const auto& jobs = info().jobs;
  std::map<std::string, double> pfi;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int g = static_cast<int>(jobs[j].gpus.size());
    const double share = gpus() > 0 ? double(g) / gpus() : 0;
    const std::string id = job_id_.empty() ? name_ + "." + job_names_[j] : job_id_;
    JobRecord jr{id, g, r.draw_w * share, 0, 0, 0};
    jr.tier_min = tier_min_;
    jr.pausable = pausable_;
    jr.starts_at_unix_s = starts_at_unix_s_;
    jr.ends_at_unix_s = ends_at_unix_s_;
    r.jobs.push_back(jr);
    if (pfi_ > 0) pfi[id] = pfi_;
  }
  if (!pfi.empty()) set_job_pfi(r, pfi);
  r.time_unix_s = time_unix_s;
  r.draw_curve = curve_;
  r.throughput_curve = tput_curve_;
  return r;
}

Result<std::vector<DrawCurvePoint>> probe_draw_curve(const sim::Scenario& scenario, uint64_t seed,
                                                     int points, double settle_s, double measure_s,
                                                     double tick_s, double warm_s) {
  if (points < 2 || !(measure_s > 0) || !(tick_s > 0) || settle_s < 0 || !(warm_s >= 0)) {
    return Status::InvalidArgument(
        "probe_draw_curve: need points >= 2, measure_s > 0, tick_s > 0, warm_s >= 0");
  }
  std::vector<DrawCurvePoint> out;
  SimNode warm("probe", scenario, seed);
  int64_t first = 1;  // the first tick after the warm-up
  for (; double(first) * tick_s <= warm_s + 1e-9; ++first) {
    FW_RETURN_IF_ERROR(warm.step(double(first) * tick_s, warm.nameplate_w()));
  }
  for (int k = 0; k < points; ++k) {
    const double b = warm.min_w() + (warm.nameplate_w() - warm.min_w()) * k / (points - 1);
    SimNode n = warm;
    double e = 0, tok0 = 0, free0 = 0;
    int m = 0;
    for (int64_t i = first;; ++i) {
      const double t = double(i) * tick_s;
      if (t > warm_s + settle_s + measure_s + 1e-9) break;
      FW_RETURN_IF_ERROR(n.step(t, b));
      if (t <= warm_s + settle_s + 1e-9) {
        tok0 = n.tokens();
        free0 = n.tokens_uncontrolled();
        continue;
      }
      e += n.power_w();
      ++m;
    }
    const double free = n.tokens_uncontrolled() - free0;
    out.push_back({b, m ? e / m : 0, free > 0 ? (n.tokens() - tok0) / free : 0});
  }
  return out;
}

}  // namespace fw::fleet

#include "studies/dr_fleet_loop.hpp"

#include <algorithm>
#include <cmath>

#include "fleet/grid.hpp"

namespace fw::studies {

Result<std::unique_ptr<DrFleetLoop>> DrFleetLoop::Make(const DrEvent& ev,
                                                       const std::vector<DrNode>& nodes,
                                                       const DrLoopOptions& lo,
                                                       DrFleetLoopOptions fo) {
  const std::string name = lo.method == allocation::Method::kOptimal
                               ? "curves"
                               : "curves-" + allocation::method_name(lo.method);
  if (!(std::isnan(lo.z) || lo.z >= 0) || !(std::isnan(lo.ki_per_s) || lo.ki_per_s >= 0)) {
    return Status::InvalidArgument("dr fleet loop: z and ki_per_s must be >= 0");
  }
  if (!(fo.round_period_s > 0) || !(fo.stair_s > 0)) {
    return Status::InvalidArgument("dr fleet loop: need round_period_s > 0 and stair_s > 0");
  }
  FW_ASSIGN_OR_RETURN(std::unique_ptr<fleet::Allocator> alloc, fleet::make_allocator(name));
  return std::unique_ptr<DrFleetLoop>(new DrFleetLoop(ev, nodes, lo, fo, std::move(alloc)));
}

DrFleetLoop::DrFleetLoop(const DrEvent& ev, const std::vector<DrNode>& nodes,
                         const DrLoopOptions& lo, DrFleetLoopOptions fo,
                         std::unique_ptr<fleet::Allocator> alloc)
    : ev_(ev), nodes_(nodes), fo_(fo), alloc_(std::move(alloc)) {
  fleet::SiteRoundOptions so;
  so.site_loop.enabled = true;
  so.site_loop.period_s = fo.round_period_s;
  so.pause_stagger_s = lo.stagger_s;
  // A job's tier is judged over the whole replay (the field demonstration's rule, dr_replay.hpp).
  so.tier_window = {0, ev.duration_s};
  so.resume_s = ev.resume_s;
  if (!std::isnan(lo.z)) so.site_loop.z = lo.z;
  if (!std::isnan(lo.ki_per_s)) so.site_loop.ki_per_s = lo.ki_per_s;
  // Dips chased: none is ever seen (site_loop.hpp: the excess must pass dip_frac x the line).
  if (!lo.freeze_on_dips) so.site_loop.dip_frac = std::numeric_limits<double>::infinity();
  round_ = std::make_unique<fleet::SiteRound>(so, *alloc_);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    names_.push_back("n" + std::to_string(i));
    site_w_ += nodes_[i].gpus * ev_.jobs[size_t(nodes_[i].job)].curve.back().cap_w;
  }
  // The joiner room the coordinator keeps under the budget (split_plan.hpp "joiner"): on top.
  double floor_w = 0;
  for (const DrNode& n : nodes_) {
    floor_w = std::max(floor_w, n.gpus * ev_.jobs[size_t(n.job)].curve.front().cap_w);
  }
  site_w_ += floor_w;
  cmd_.node_cap_w.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    cmd_.node_cap_w[i] = ev_.jobs[size_t(nodes_[i].job)].curve.back().cap_w;
  }
  cmd_.job_pause.assign(ev_.jobs.size(), false);
  paused_.assign(ev_.jobs.size(), false);
}

fleet::NodeRecord DrFleetLoop::record(size_t i, const DrReadings& r) const {
  const DrNode& n = nodes_[i];
  const DrJobSpec& job = ev_.jobs[size_t(n.job)];
  fleet::NodeRecord rec;
  rec.node = names_[i];
  rec.gpus = n.gpus;
  rec.nameplate_w = n.gpus * job.curve.back().cap_w;
  rec.min_w = n.gpus * job.curve.front().cap_w;
  rec.draw_w = std::max(0.0, r.node_power_w[i]);
  rec.cap_w = n.gpus * cmd_.node_cap_w[i];
  rec.uncontrolled_w = std::min(rec.nameplate_w, n.gpus * job.curve.back().power_w);
  rec.paused_draw_w = 0;  // the plant's paused jobs draw 0 W (dr_plant.hpp, the field's)
  fleet::JobRecord jr;
  jr.id = job.name;
  jr.gpus = n.gpus;
  jr.draw_w = rec.draw_w;
  jr.tier_min = job.tier_min;
  jr.pausable = job.pausable;
  rec.jobs.push_back(jr);
  rec.time_unix_s = r.time_s;
  double last_budget = -1;
  for (const DrCapPoint& p : job.curve) {
    const double b = n.gpus * p.cap_w;
    if (b <= last_budget) continue;  // budgets strictly increasing
    last_budget = b;
    rec.draw_curve.emplace_back(b, n.gpus * p.power_w);
    rec.throughput_curve.emplace_back(b, p.t_rel);
  }
  return rec;
}

void DrFleetLoop::build_schedule() {
  const double B =
      ev_.baseline_measured ? (base_n_ ? base_sum_ / double(base_n_) : 0) : ev_.baseline_w;
  baseline_w_ = B;
  const double from = ev_.steps.front().start_s, to = ev_.end_s + ev_.release_ramp_s;
  const double rd = ev_.ramp_down_w_per_s, ru = ev_.ramp_up_w_per_s;
  fleet::GridTarget* last = nullptr;
  double level = B;  // where the limited line stands at the stair's start
  for (double t = from; t < to - 1e-9; t += fo_.stair_s) {
    const double t1 = std::min(to, t + fo_.stair_s);
    // A step's hold level from its start (the ramp window is a deadline, not a path); on the
    // release, the line's lowest value within the stair (piecewise linear: at an end).
    double depth = std::max(dr_depth_at(ev_, t), dr_depth_at(ev_, t1 - 1e-9));
    if (t < ev_.end_s) {
      for (const DrStep& s : ev_.steps) {
        if (s.start_s <= t + 1e-9) depth = s.depth;
      }
    }
    double value = (1 - depth) * B;
    // The down limit wins over the step: the stairs descend from where the line stands at it
    // (the targets' own ramp rates then join the stairs into one slope, grid.hpp).
    if (rd > 0) value = std::max(value, level - rd * (t1 - t));
    level = value;
    if (last && std::abs(*last->value_w - value) < 1e-9) {
      last->end_unix_s = t1;
      continue;
    }
    fleet::GridTarget g;
    g.value_w = value;
    // A limited descent's stair is reached at its end (its ramp joins the stair before it).
    g.start_unix_s = rd > 0 && value < (last ? *last->value_w : B) ? t1 : t;
    g.end_unix_s = std::max(t1, g.start_unix_s + 1e-3);
    g.ramp_w_per_s = rd;
    g.ramp_up_w_per_s = ru;
    g.correlation_id = "dr-" + std::to_string(grid_.events.size());
    grid_.events.push_back(g);
    last = &grid_.events.back();
  }
  have_grid_ = true;
}

DrCommand DrFleetLoop::update(const DrReadings& r) {
  const double t = r.time_s;
  double site = 0;
  for (double p : r.node_power_w) site += p;
  const double first = ev_.steps.front().start_s;
  if (!have_grid_ && t <= first) {
    base_sum_ += site;
    ++base_n_;
  }
  const double lookahead = fleet::round_lookahead_s(ev_.sample_period_s, site_w_, grid_);
  if (!have_grid_ && t + lookahead + fo_.round_period_s >= first) build_schedule();
  if (t - last_round_s_ < fo_.round_period_s - 1e-9) return cmd_;
  last_round_s_ = t;

  fleet::PlanInput in;
  in.now_unix_s = t;
  in.site_w = site_w_;
  in.grid = grid_;
  in.lookahead_s = fleet::round_lookahead_s(ev_.sample_period_s, site_w_, grid_);
  in.expiry_s = 10;
  in.leader_rev = 1;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    fleet::NodeRecord rec = record(i, r);
    in.joiner_reserve_w = std::max(in.joiner_reserve_w, rec.min_w);
    in.live.emplace(names_[i], std::move(rec));
  }
  in.assigned = assigned_;
  const fleet::SiteRoundResult res = round_->plan(in);
  if (res.plan.below_floors) ++infeasible_;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const DrJobSpec& job = ev_.jobs[size_t(nodes_[i].job)];
    auto w = res.plan.watts.find(names_[i]);
    if (w == res.plan.watts.end()) continue;
    const double cap = w->second / std::max(1, nodes_[i].gpus);
    cmd_.node_cap_w[i] = std::clamp(cap, job.curve.front().cap_w, job.curve.back().cap_w);
    fleet::Assignment a;
    a.watts = w->second;
    a.revision = 1;
    a.expires_unix_s = t + in.expiry_s;
    a.safe_w = res.plan.safe_w.at(names_[i]);
    a.reserve_w = res.plan.reserve_w.at(names_[i]);
    a.pause = res.plan.paused_nodes.count(names_[i]) > 0;
    assigned_[names_[i]] = a;
  }
  // The commanded target is the loop's split (what the ramp limits bound, site_loop.hpp).
  fall_w_per_s_ = std::max(fall_w_per_s_, round_->loop().max_fall_w_per_s());
  rise_w_per_s_ = std::max(rise_w_per_s_, round_->loop().max_rise_w_per_s());
  for (size_t j = 0; j < ev_.jobs.size(); ++j) {
    const bool p = res.plan.paused_jobs.count(ev_.jobs[j].name) > 0;
    if (p && !paused_[j]) pauses_.push_back({int(j), t, -1});
    if (!p && paused_[j]) {
      for (auto it = pauses_.rbegin(); it != pauses_.rend(); ++it) {
        if (it->job == int(j) && it->to_s < 0) {
          it->to_s = t;
          break;
        }
      }
    }
    paused_[j] = p;
    cmd_.job_pause[j] = p;
  }
  const bool in_event = t >= first && t < ev_.end_s;
  holdable_w_ = in_event ? res.holdable.holdable_w : std::numeric_limits<double>::quiet_NaN();
  shortfall_w_ = in_event ? res.shortfall_w : 0.0;
  // The W the ramp limit keeps the line above the event's target line, beyond the tolerance.
  const double target = baseline_w_ * (1 - dr_depth_at(ev_, t));
  ramp_shortfall_w_ = in_event && have_grid_
                          ? std::max(0.0, fleet::effective_budget_w(site_w_, grid_, t) - target -
                                              ev_.tolerance_frac * baseline_w_)
                          : 0.0;
  return cmd_;
}

}  // namespace fw::studies

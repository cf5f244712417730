#include "fleet/site_round.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "fleet/grid.hpp"

namespace fw::fleet {

double round_lookahead_s(double tick_s, double site_w, const GridSchedule& grid) {
  double slowest = 0;  // the slowest ramp: the longest 1 % move
  for (const GridTarget& e : grid.events) {
    if (e.ramp_w_per_s > 0)
      slowest = slowest > 0 ? std::min(slowest, e.ramp_w_per_s) : e.ramp_w_per_s;
  }
  double s = 2 * tick_s;
  if (slowest > 0) s += std::min(0.01 * site_w / slowest, 0.01 * kMaxRampS);
  return s;
}

namespace {

// The curve's value at x: linear between points, the end points' values outside them.
double curve_at(const std::vector<std::pair<double, double>>& c, double x) {
  if (x <= c.front().first) return c.front().second;
  for (size_t i = 1; i < c.size(); ++i) {
    if (x <= c[i].first) {
      const auto& [x0, y0] = c[i - 1];
      const auto& [x1, y1] = c[i];
      return x1 > x0 ? y0 + (y1 - y0) * (x - x0) / (x1 - x0) : y1;
    }
  }
  return c.back().second;
}

}  // namespace

void SiteRound::account_tiers(PlanInput& in) {
  const double ws = o_.tier_window.start_unix_s, we = o_.tier_window.end_unix_s;
  const double window_s = we - ws;
  const double now = std::clamp(in.now_unix_s, ws, we);
  // Progress: what was in force since the last round, then this round's t_rel per job.
  std::map<std::string, std::pair<double, int>> trel;  // id -> (Σ t_rel over nodes, nodes)
  std::map<std::string, double> tier;
  for (const auto& [node, rec] : in.live) {
    if (rec.jobs.empty() || rec.throughput_curve.size() < 2) continue;
    const JobRecord& j = rec.jobs.front();
    const auto a = in.assigned.find(node);
    const bool paused = a != in.assigned.end() && a->second.pause;
    auto& [sum, n] = trel[j.id];
    sum += paused ? 0.0 : std::clamp(curve_at(rec.throughput_curve, rec.cap_w), 0.0, 1.5);
    ++n;
    tier[j.id] = j.tier_min;
  }
  const double dt = last_progress_s_ < 0 ? 0.0 : std::max(0.0, now - last_progress_s_);
  for (const auto& [id, sn] : trel) {
    auto p = progress_s_.find(id);
    if (p == progress_s_.end()) {
      progress_s_[id] = now - ws;  // first seen: uncapped since the window's start
    } else {
      p->second += trel_[id] * dt;
    }
    trel_[id] = sn.first / sn.second;
  }
  last_progress_s_ = now;
  // The spell: the events below the site budget in force now (else the first to come), chained.
  const GridTarget* first = nullptr;
  auto begins = [&](const GridTarget& e) { return std::max(e.start_unix_s, in.now_unix_s); };
  auto ends = [](const GridTarget& e) {  // open-ended (0): never
    return e.end_unix_s > 0 ? e.end_unix_s : std::numeric_limits<double>::infinity();
  };
  for (const GridTarget& e : in.grid.events) {
    if (!e.value_w || *e.value_w >= in.site_w || ends(e) <= in.now_unix_s) continue;
    if (!first || begins(e) < begins(*first)) first = &e;
  }
  if (!first) return;
  const double spell_start = first->start_unix_s;
  double spell_end = ends(*first);
  for (bool grew = true; grew;) {
    grew = false;
    for (const GridTarget& e : in.grid.events) {
      if (!e.value_w || *e.value_w >= in.site_w) continue;
      if (e.start_unix_s <= spell_end + 1e-6 && ends(e) > spell_end) {
        spell_end = ends(e);
        grew = true;
      }
    }
  }
  const double E = std::min(spell_end, we);
  const double from = std::clamp(spell_start, now, we);
  if (!(E > from)) return;
  for (const auto& [id, t] : tier) {
    if (!(t > 0)) continue;
    const double P = progress_s_[id];
    const double ahead = from - now, after = we - E;
    const double hold =
        std::clamp(((t + 0.005) * window_s - P - ahead - after) / (E - from), 0.0, 1.0);
    in.pause_left_s[id] = std::max(0.0, P + ahead + (we - from) - (t + 0.01) * window_s -
                                            o_.resume_s - 2 * o_.pause_stagger_s);
    for (auto& [node, rec] : in.live) {
      if (!rec.jobs.empty() && rec.jobs.front().id == id) rec.jobs.front().hold_tier = hold;
    }
  }
}

SiteRoundResult SiteRound::plan(PlanInput in) {
  SiteRoundResult r;
  if (o_.tier_window.end_unix_s > o_.tier_window.start_unix_s) account_tiers(in);
  for (const auto& [node, rec] : in.live) {
    r.measured_w += rec.draw_w;
    r.baseline_w += rec.uncontrolled_w > 0 ? rec.uncontrolled_w : rec.nameplate_w;
  }
  r.line_w = std::min(effective_budget_w(in.site_w, in.grid, in.now_unix_s),
                      effective_budget_w(in.site_w, in.grid, in.now_unix_s + in.lookahead_s));
  if (o_.site_loop.enabled) {
    const double line = r.line_w;
    // Feed-forward from the nodes' published draw curves (keys.hpp): the site's draw at a
    // split, through this allocator; a node without a curve is taken to draw its share. The
    // joiners' floors that plan_split leaves unassigned (one, plus each pending joiner's) are
    // left out of the split here too. Nodes of paused jobs (their assignments say pause) hold
    // their floors and draw what they draw now.
    std::vector<NodeRecord> recs;
    bool curves = false;
    double paused_floor_w = 0, paused_draw_w = 0;
    for (const auto& [node, rec] : in.live) {
      auto a = in.assigned.find(node);
      if (a != in.assigned.end() && a->second.pause) {
        paused_floor_w += rec.min_w;
        paused_draw_w += rec.draw_w;
        continue;
      }
      recs.push_back(rec);
      curves |= !rec.draw_curve.empty();
    }
    double room_w = std::max(0.0, in.joiner_reserve_w);  // as plan_split leaves it
    for (const auto& [node, min_w] : in.pending) room_w += std::max(0.0, min_w);
    SiteDrawModel model;
    if (curves) {
      model = [&](double split_w) {
        const std::vector<double> w =
            allocator_->split(std::max(0.0, split_w - room_w - paused_floor_w), recs);
        double p = paused_draw_w;
        for (size_t i = 0; i < recs.size(); ++i) p += curve_draw_w(recs[i].draw_curve, w[i]);
        return p;
      };
    }
    // The binding event's ramp rate limits the split both ways (issue 45; one rate per event).
    SiteRampLimits limits;
    const GridTarget* moving = binding_event(in.site_w, in.grid, in.now_unix_s);
    if (!moving) moving = binding_event(in.site_w, in.grid, in.now_unix_s + in.lookahead_s);
    if (moving) {
      const double up =
          moving->ramp_up_w_per_s > 0 ? moving->ramp_up_w_per_s : moving->ramp_w_per_s;
      limits = {moving->ramp_w_per_s, up};
      r.ramp_limit_w_per_s = moving->ramp_w_per_s;
      r.ramp_up_limit_w_per_s = up;
      r.ramp_limited = true;
    }
    const double split =
        loop_.update(in.now_unix_s, r.measured_w, line, line < in.site_w, model, limits);
    in.track_w = std::clamp(split - line, 0.0, std::max(0.0, in.site_w - line));
    // split_plan.hpp "reclaim": the loop re-splits instead, unless asked for both.
    in.reclaim = !(line < in.site_w) || o_.reclaim;
    in.binding = line < in.site_w;
    in.pause_stagger_s = o_.pause_stagger_s;
    in.last_pause_change_unix_s = last_pause_change_s_;
    // Pausing judges the feed-forward split (the curves' answer), not the integral's swing.
    if (model) in.pause_split_w = std::clamp(loop_.base_w(), line, in.site_w);
    // Each job's pause budget (split_plan.hpp "pausing"): the seconds it has been paused in
    // this event (this object's count; a new coordinator leader starts from 0), and the
    // event's span (the lowest event in force; 0 when open-ended), kept until the line no
    // longer binds.
    if (in.binding) {
      const double dt_s = last_pause_count_s_ > 0 ? in.now_unix_s - last_pause_count_s_ : 0.0;
      for (const std::string& id : paused_jobs_) paused_s_[id] += std::max(0.0, dt_s);
      last_pause_count_s_ = in.now_unix_s;
      const GridTarget* low = nullptr;
      for (const GridTarget& e : in.grid.events) {
        const bool now_in =
            e.start_unix_s <= in.now_unix_s && (e.end_unix_s <= 0 || in.now_unix_s < e.end_unix_s);
        if (now_in && (!low || *e.value_w < *low->value_w)) low = &e;
      }
      if (low) event_span_s_ = low->end_unix_s > 0 ? low->end_unix_s - low->start_unix_s : 0.0;
      in.event_span_s = event_span_s_;
      // Past the event's end (its release ramp still binds the line) no job pauses and the
      // paused ones resume, staggered: a 240 s fleet-sim run paused a job again on the ramp.
      if (!low) in.binding = false;
    } else {
      paused_s_.clear();
      last_pause_count_s_ = -1;
      event_span_s_ = 0;
    }
    in.paused_s = paused_s_;
  }
  r.plan = plan_split(in, *allocator_);
  if (r.plan.pause_changed) last_pause_change_s_ = in.now_unix_s;
  paused_jobs_ = r.plan.paused_jobs;
  // The deepest target the site holds, against the deepest event in force or to come (issue
  // 45; split_plan.hpp site_holdable). Pausing counts with the site loop's pausing on; the pause
  // budgets are that event's (the seconds used so far while it binds).
  const GridTarget* deepest = nullptr;
  for (const GridTarget& e : in.grid.events) {
    if (!e.value_w || *e.value_w >= in.site_w) continue;
    if (e.end_unix_s > 0 && e.end_unix_s <= in.now_unix_s) continue;
    if (!deepest || *e.value_w < *deepest->value_w) deepest = &e;
  }
  in.pause_stagger_s = o_.site_loop.enabled ? o_.pause_stagger_s : 0.0;
  double span_left_s = 0;
  in.event_span_s = 0;
  if (deepest && deepest->end_unix_s > 0) {
    in.event_span_s = deepest->end_unix_s - deepest->start_unix_s;
    span_left_s = deepest->end_unix_s - std::max(in.now_unix_s, deepest->start_unix_s);
  }
  // In draw watts with the site loop (it judges measured power, through the nodes' draw
  // curves), else in budget watts (the assignments must fit under the line).
  r.holdable = site_holdable(in, r.plan.held_w, allocator_->name().rfind("curves", 0) == 0,
                             span_left_s, o_.site_loop.enabled);
  if (deepest) {
    r.shortfall_w = holdable_shortfall_w(r.holdable, *deepest->value_w);
    r.shortfall_event = deepest->correlation_id;
  }
  return r;
}

}  // namespace fw::fleet

#include "fleet/split_plan.hpp"

#include <algorithm>
#include <cmath>

#include "fleet/grid.hpp"

namespace fw::fleet {

namespace {

// A node lowered but not yet confirmed may still draw its reserve: raises (and new nodes above
// their floor) are scaled back by one factor f until held + sum(max(watts, reserve)) fits the
// effective budget. A raised node whose reserve is above its new watts (caps reported above
// them, or an unconfirmed earlier share) commits its reserve whatever f is, so f is found by
// bisection on the commitments, not by sharing the excess over every raise.
void limit_raises(const PlanInput& in, const std::vector<NodeRecord>& nodes, Plan* p) {
  const size_t n = nodes.size();
  std::vector<double> base(n), want(n);
  std::vector<bool> raised(n), fixed(n);
  double committed_fixed = p->held_w;
  for (size_t i = 0; i < n; ++i) {
    const std::string& name = nodes[i].node;
    auto prev = in.assigned.find(name);
    base[i] = prev == in.assigned.end() ? nodes[i].min_w : prev->second.watts;
    want[i] = p->watts[name];
    const double reserve = p->reserve_w[name];
    raised[i] = want[i] > base[i];
    fixed[i] = reserve > want[i] + 1e-9;
    if (!raised[i]) committed_fixed += std::max(want[i], reserve);
  }
  auto committed = [&](double f) {
    double c = committed_fixed;
    for (size_t i = 0; i < n; ++i) {
      if (!raised[i]) continue;
      const double w = base[i] + f * (want[i] - base[i]);
      c += fixed[i] ? p->reserve_w[nodes[i].node] : std::max(w, nodes[i].cap_w);
    }
    return c;
  };
  const double limit_w = p->split_w - p->joiner_w;
  if (committed(1) <= limit_w + 1e-9) return;
  double lo = 0, hi = 1;  // committed(lo) fits (or nothing does), committed(hi) does not
  for (int k = 0; k < 60; ++k) {
    const double mid = 0.5 * (lo + hi);
    (committed(mid) <= limit_w + 1e-9 ? lo : hi) = mid;
  }
  const double f = lo;
  for (size_t i = 0; i < n; ++i) {
    if (!raised[i]) continue;
    const std::string& name = nodes[i].node;
    const double lowered = base[i] + f * (want[i] - base[i]);
    if (!fixed[i]) p->reserve_w[name] = std::max(lowered, nodes[i].cap_w);
    p->watts[name] = lowered;
  }
}

// Reclaims idle headroom (split_plan.hpp "reclaim"): nodes drawing well under their share give
// what they leave unused (above draw + margin) to nodes held at theirs, up to the nameplates.
void reclaim_idle(const PlanInput& in, const std::vector<NodeRecord>& nodes,
                  std::vector<double>& w) {
  const size_t n = nodes.size();
  std::vector<size_t> busy, idle;
  std::vector<double> keep(n);
  for (size_t i = 0; i < n; ++i) {
    const NodeRecord& r = nodes[i];
    const double margin_w = kReclaimMargin * r.nameplate_w;
    const auto prev = in.assigned.find(r.node);
    // What the node holds now (a node without an assignment holds its floor): its draw was
    // measured under it; drawing near it, the node may want more.
    const double ref_w = prev == in.assigned.end() ? r.min_w : prev->second.watts;
    if (r.draw_w >= ref_w - 0.5 * margin_w) {
      if (w[i] < r.nameplate_w - 1e-6) busy.push_back(i);
    } else if (r.draw_w + margin_w < w[i]) {
      keep[i] = std::max(r.min_w, r.draw_w + margin_w);
      if (keep[i] < w[i] - 1e-6) idle.push_back(i);
    }
  }
  if (busy.empty() || idle.empty()) return;
  double freed_w = 0, room_w = 0, busy_w = 0;
  for (size_t i : idle) freed_w += w[i] - keep[i];
  std::vector<double> lo, hi, weight;
  for (size_t i : busy) {
    lo.push_back(w[i]);
    hi.push_back(nodes[i].nameplate_w);
    weight.push_back(std::max(1, nodes[i].gpus));
    room_w += nodes[i].nameplate_w - w[i];
    busy_w += w[i];
  }
  const double given_w = std::min(freed_w, room_w);
  const std::vector<double> raised = water_fill(busy_w + given_w, lo, hi, weight);
  for (size_t k = 0; k < busy.size(); ++k) w[busy[k]] = std::max(w[busy[k]], raised[k]);
  // What the busy nodes cannot take stays with the idle ones, in proportion to what they gave.
  const double back = freed_w > 0 ? (freed_w - given_w) / freed_w : 0;
  for (size_t i : idle) w[i] = keep[i] + back * (w[i] - keep[i]);
}

// The split with pausing (split_plan.hpp "pausing"): the paused jobs' nodes at their floors, the
// others through the allocator.
std::vector<double> split_running(const PlanInput& in, const Allocator& allocator,
                                  const std::vector<NodeRecord>& nodes, double budget_w, Plan* p) {
  // What pausing judges by: the same budget at the feed-forward split when given.
  const double judged_w =
      in.pause_split_w > 0 ? budget_w + (in.pause_split_w - p->split_w) : budget_w;
  const std::vector<CurveJob> jobs = curve_jobs(nodes);
  std::set<std::string> paused;
  for (const CurveJob& j : jobs) {
    for (size_t i : j.nodes) {
      auto a = in.assigned.find(nodes[i].node);
      if (a != in.assigned.end() && a->second.pause) paused.insert(j.id);
    }
  }
  // A job's pause budget in the event ("pausing"): spent once paused (1 - tier) x the span.
  auto spent = [&](const CurveJob& j) {
    if (const auto left = in.pause_left_s.find(j.id); left != in.pause_left_s.end()) {
      return left->second <= 1e-9;
    }
    if (!(in.event_span_s > 0)) return false;
    const auto it = in.paused_s.find(j.id);
    const double used_s = it == in.paused_s.end() ? 0.0 : it->second;
    return used_s >= std::clamp(1 - j.tier_min, 0.0, 1.0) * in.event_span_s - 1e-9;
  };
  if (in.pause_stagger_s > 0 && in.now_unix_s - in.last_pause_change_unix_s >= in.pause_stagger_s) {
    double floors_w = 0;  // a paused job whose budget is spent counts as running
    for (const CurveJob& j : jobs) {
      floors_w += paused.count(j.id) && !spent(j) ? j.floor_w : j.tier_floor_w;
    }
    const CurveJob* pause = nullptr;
    const CurveJob* resume = nullptr;
    for (const CurveJob& j : jobs) {
      if (paused.count(j.id)) {
        // Its idle nodes draw under their floors, which the feed-forward split counts as room:
        // that room goes when the job runs again, so it counts against the resume.
        double idle_w = 0;
        for (size_t i : j.nodes) idle_w += std::max(0.0, nodes[i].min_w - nodes[i].draw_w);
        const bool fits = floors_w + 1.1 * (j.tier_floor_w - j.floor_w) + idle_w <= judged_w;
        if (!resume && (!in.binding || fits || spent(j))) resume = &j;
      } else if (j.pausable && in.binding && !spent(j) && floors_w > judged_w + 1e-6) {
        if (!pause || j.tier_min < pause->tier_min ||
            (j.tier_min == pause->tier_min && j.tier_floor_w > pause->tier_floor_w)) {
          pause = &j;
        }
      }
    }
    if (pause) {
      paused.insert(pause->id);
      p->pause_changed = true;
    } else if (resume) {
      paused.erase(resume->id);
      p->pause_changed = true;
    }
  }
  std::vector<NodeRecord> running;
  std::vector<size_t> index;
  double paused_w = 0;
  std::vector<double> w(nodes.size(), 0.0);
  for (const CurveJob& j : jobs) {
    for (size_t i : j.nodes) {
      if (paused.count(j.id)) {
        w[i] = nodes[i].min_w;
        paused_w += nodes[i].min_w;
        p->paused_nodes.insert(nodes[i].node);
      } else {
        running.push_back(nodes[i]);
        index.push_back(i);
      }
    }
  }
  p->paused_jobs = paused;
  if (paused.empty()) return allocator.split(budget_w, nodes);
  const std::vector<double> r = allocator.split(std::max(0.0, budget_w - paused_w), running);
  for (size_t k = 0; k < index.size(); ++k) w[index[k]] = r[k];
  return w;
}

}  // namespace

SiteHoldable site_holdable(const PlanInput& in, double held_w, bool tiers, double span_left_s,
                           bool draw) {
  SiteHoldable h;
  h.floor_w = h.holdable_w = std::max(0.0, held_w);
  std::vector<NodeRecord> nodes;
  for (const auto& [node, r] : in.live) nodes.push_back(r);
  std::vector<double> shed;  // per pausable job with budget left: running floor - floor
  double phi_sum = 0;
  for (const CurveJob& j : curve_jobs(nodes)) {
    const double budget_w = tiers ? std::max(j.tier_floor_w, j.floor_w) : j.floor_w;
    // The job's floors in the unit asked for: its nodes' shares of the budget, or their draw.
    double running_w = 0, floor_w = 0, paused_w = 0;
    for (size_t i : j.nodes) {
      const NodeRecord& r = nodes[i];
      const double share_w = std::max(r.min_w, budget_w * std::max(1, r.gpus) / double(j.gpus));
      running_w += draw ? curve_draw_w(r.draw_curve, share_w) : share_w;
      floor_w += draw ? curve_draw_w(r.draw_curve, r.min_w) : r.min_w;
      paused_w +=
          draw ? (r.paused_draw_w >= 0 ? r.paused_draw_w : curve_draw_w(r.draw_curve, r.min_w))
               : r.min_w;
    }
    h.floor_w += floor_w;
    h.holdable_w += running_w;
    if (!(in.pause_stagger_s > 0) || !j.pausable) continue;
    double phi = 1;
    if (const auto left = in.pause_left_s.find(j.id); left != in.pause_left_s.end()) {
      phi = span_left_s > 0 ? std::clamp(left->second / span_left_s, 0.0, 1.0)
                            : (left->second > 0 ? 1.0 : 0.0);
    } else if (in.event_span_s > 0 && span_left_s > 0) {
      const auto it = in.paused_s.find(j.id);
      const double used_s = it == in.paused_s.end() ? 0.0 : it->second;
      const double left_s = std::clamp(1 - j.tier_min, 0.0, 1.0) * in.event_span_s - used_s;
      phi = std::clamp(left_s / span_left_s, 0.0, 1.0);
    }
    if (phi <= 0) continue;
    phi_sum += phi;
    shed.push_back(std::max(0.0, running_w - paused_w));
  }
  std::sort(shed.begin(), shed.end());
  const auto k = std::min(shed.size(), static_cast<size_t>(std::floor(phi_sum + 1e-9)));
  for (size_t i = 0; i < k; ++i) h.holdable_w -= shed[i];
  return h;
}

double holdable_shortfall_w(const SiteHoldable& h, double target_w) {
  return std::max(0.0, h.holdable_w - target_w);
}

Plan plan_split(const PlanInput& in, const Allocator& allocator) {
  Plan p;
  p.site_w = in.site_w;
  p.effective_w = std::min(effective_budget_w(in.site_w, in.grid, in.now_unix_s),
                           effective_budget_w(in.site_w, in.grid, in.now_unix_s + in.lookahead_s));
  for (const auto& [node, a] : in.assigned) {
    if (in.live.count(node)) continue;
    if (in.off.count(node)) {
      p.freed.push_back(node);
      continue;
    }
    p.held.push_back(node);
    p.held_w += std::max({a.watts, a.safe_w, a.reserve_w});
  }
  p.split_w = p.effective_w + std::max(0.0, in.track_w);
  const double left_w = std::max(0.0, p.split_w - p.held_w);
  const double safe_left_w = std::max(0.0, p.effective_w - p.held_w);
  std::vector<NodeRecord> nodes;
  double floors_w = 0, gpus = 0;
  for (const auto& [node, r] : in.live) {
    nodes.push_back(r);
    floors_w += r.min_w;
    gpus += r.gpus;
  }
  p.below_floors = !nodes.empty() && floors_w > left_w;
  // Room for one joiner's floor and each pending joiner's, unless the live floors need it.
  double room_w = std::max(0.0, in.joiner_reserve_w);
  for (const auto& [node, min_w] : in.pending) {
    if (!in.live.count(node)) room_w += std::max(0.0, min_w);
  }
  p.joiner_w = std::clamp(left_w - floors_w, 0.0, room_w);
  std::vector<double> w = split_running(in, allocator, nodes, left_w - p.joiner_w, &p);
  if (in.reclaim && !p.below_floors && p.paused_nodes.empty()) reclaim_idle(in, nodes, w);
  const bool settling = in.now_unix_s < in.settle_until_unix_s;
  for (size_t i = 0; i < nodes.size(); ++i) {
    double watts = w[i];
    const auto had = in.assigned.find(nodes[i].node);
    if (settling && (had == in.assigned.end() || had->second.revision == in.leader_rev)) {
      const NodeRecord& r = nodes[i];
      watts = std::min(watts, r.safe_w > 0 ? std::max(r.min_w, r.safe_w) : r.min_w);
    }
    p.watts[nodes[i].node] = watts;
    p.safe_w[nodes[i].node] = gpus > 0 ? safe_left_w * nodes[i].gpus / gpus : 0.0;
    double reserve = std::max(watts, nodes[i].cap_w);
    if (auto prev = in.assigned.find(nodes[i].node); prev != in.assigned.end()) {
      const double written_s = prev->second.expires_unix_s - in.expiry_s;
      if (nodes[i].time_unix_s <= written_s) {
        reserve = std::max({reserve, prev->second.watts, prev->second.reserve_w});
      }
    }
    p.reserve_w[nodes[i].node] = reserve;
  }
  limit_raises(in, nodes, &p);
  return p;
}

}  // namespace fw::fleet

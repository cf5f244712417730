#include "fleet/split_plan.hpp"

#include <algorithm>

#include "fleet/grid.hpp"

namespace fw::fleet {

namespace {

// A node lowered but not yet confirmed may still draw its reserve: raises (and new nodes above
// their floor) are scaled back until held + sum(max(watts, reserve)) fits the effective budget.
void limit_raises(const PlanInput& in, const std::vector<NodeRecord>& nodes, Plan* p) {
  double committed = p->held_w, raise = 0;
  std::vector<double> base(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i].node;
    auto prev = in.assigned.find(n);
    base[i] = prev == in.assigned.end() ? nodes[i].min_w : prev->second.watts;
    const double w = p->watts[n];
    committed += std::max(w, p->reserve_w[n]);
    if (w > base[i]) raise += w - base[i];
  }
  const double excess = committed - p->effective_w;
  if (excess <= 1e-9 || raise <= 0) return;
  const double f = std::max(0.0, 1 - excess / raise);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string& n = nodes[i].node;
    double& w = p->watts[n];
    if (w <= base[i]) continue;
    const double lowered = base[i] + f * (w - base[i]);
    if (p->reserve_w[n] <= w + 1e-9) p->reserve_w[n] = std::max(lowered, nodes[i].cap_w);
    w = lowered;
  }
}

}  // namespace

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
  const double left_w = std::max(0.0, p.effective_w - p.held_w);
  std::vector<NodeRecord> nodes;
  double floors_w = 0, gpus = 0;
  for (const auto& [node, r] : in.live) {
    nodes.push_back(r);
    floors_w += r.min_w;
    gpus += r.gpus;
  }
  p.below_floors = !nodes.empty() && floors_w > left_w;
  const std::vector<double> w = allocator.split(left_w, nodes);
  for (size_t i = 0; i < nodes.size(); ++i) {
    p.watts[nodes[i].node] = w[i];
    p.safe_w[nodes[i].node] = gpus > 0 ? left_w * nodes[i].gpus / gpus : 0.0;
    double reserve = std::max(w[i], nodes[i].cap_w);
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

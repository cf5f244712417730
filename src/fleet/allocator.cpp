#include "fleet/allocator.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace fw::fleet {

std::vector<double> water_fill(double budget_w, const std::vector<double>& lo,
                               const std::vector<double>& hi, const std::vector<double>& weight) {
  const size_t n = lo.size();
  std::vector<double> out(n, 0.0);
  if (n == 0) return out;
  const double floor_w = std::accumulate(lo.begin(), lo.end(), 0.0);
  if (budget_w <= floor_w) {  // below the floors: everyone the same fraction of its floor
    const double f = floor_w > 0 ? std::max(0.0, budget_w) / floor_w : 0.0;
    for (size_t i = 0; i < n; ++i) out[i] = lo[i] * f;
    return out;
  }
  auto total = [&](double lambda) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += std::clamp(lambda * weight[i], lo[i], hi[i]);
    return s;
  };
  double top = 1.0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, hi[i] / std::max(weight[i], 1e-12));
  if (total(top) <= budget_w) return hi;
  double a = 0, b = top;  // total(a) <= budget_w < total(b)
  for (int it = 0; it < 100; ++it) {
    const double m = 0.5 * (a + b);
    (total(m) <= budget_w ? a : b) = m;
  }
  for (size_t i = 0; i < n; ++i) out[i] = std::clamp(a * weight[i], lo[i], hi[i]);
  return out;
}

namespace {

std::vector<double> split_with(double budget_w, const std::vector<NodeRecord>& nodes,
                               double (*weight_of)(const NodeRecord&)) {
  std::vector<double> lo, hi, w;
  for (const auto& n : nodes) {
    lo.push_back(n.min_w);
    hi.push_back(n.nameplate_w);
    w.push_back(std::max(weight_of(n), 1e-9));
  }
  return water_fill(budget_w, lo, hi, w);
}

}  // namespace

std::vector<double> EqualAllocator::split(double budget_w,
                                          const std::vector<NodeRecord>& nodes) const {
  return split_with(budget_w, nodes, [](const NodeRecord& n) { return double(n.gpus); });
}

std::vector<double> ProportionalAllocator::split(double budget_w,
                                                 const std::vector<NodeRecord>& nodes) const {
  return split_with(budget_w, nodes, [](const NodeRecord& n) {
    double jobs_w = 0;
    for (const auto& j : n.jobs) jobs_w += j.draw_w;
    return std::max({n.draw_w, jobs_w, 0.05 * n.nameplate_w});
  });
}

namespace {

// The node's jobs as allocation::Jobs (see JobAllocator); `owner[k]` is job k's node index.
void jobs_of(const NodeRecord& n, size_t index, std::vector<allocation::Job>& jobs,
             std::vector<size_t>& owner) {
  const int gpus = std::max(n.gpus, 1);
  const double min_per_gpu_w = n.min_w / gpus;
  // P_max per GPU: what the node would draw uncontrolled when it says (above its floor), else
  // its nameplate; watts above it would buy no throughput.
  double per_gpu_w = n.nameplate_w / gpus;
  if (n.uncontrolled_w > 0)
    per_gpu_w = std::clamp(n.uncontrolled_w / gpus, 1.05 * min_per_gpu_w, per_gpu_w);
  int left = gpus;
  auto add = [&](const std::string& id, int job_gpus, double pfi, double job_min_w) {
    const double pmax_w = per_gpu_w * job_gpus;
    if (job_gpus <= 0 || !(pmax_w > 0)) return;
    const double floor_w = std::max(job_min_w, min_per_gpu_w * job_gpus);
    const double frac = std::clamp(floor_w / pmax_w, 1e-3, 0.999);
    jobs.push_back(allocation::job_from_pfi(id, pmax_w, double(job_gpus), pfi, frac, 1.0));
    owner.push_back(index);
  };
  for (const auto& j : n.jobs) {
    const int g = std::min(j.gpus, left);
    const double pfi = j.pfi > 0 ? j.pfi : (j.elasticity > 0 ? 1.0 / j.elasticity : 1.0);
    add(j.id, g, pfi, j.min_w);
    left -= std::max(g, 0);
  }
  add("(idle)", left, 1.0, 0.0);
}

}  // namespace

std::vector<double> JobAllocator::split(double budget_w,
                                        const std::vector<NodeRecord>& nodes) const {
  std::vector<allocation::Job> jobs;
  std::vector<size_t> owner;
  for (size_t i = 0; i < nodes.size(); ++i) jobs_of(nodes[i], i, jobs, owner);
  double floors_w = 0;
  for (const auto& j : jobs) floors_w += allocation::floor_w(j);
  if (jobs.empty() || budget_w < floors_w) return EqualAllocator().split(budget_w, nodes);
  const auto a = allocation::allocate(jobs, budget_w, method_);
  if (!a.feasible) return EqualAllocator().split(budget_w, nodes);
  std::vector<double> out(nodes.size(), 0.0);
  for (size_t k = 0; k < jobs.size(); ++k) out[owner[k]] += a.power_w[k];
  for (size_t i = 0; i < nodes.size(); ++i) {
    out[i] = std::min(out[i], nodes[i].nameplate_w);  // rounding only; floors hold by build
  }
  return out;
}

std::vector<std::pair<double, double>> upper_concave_envelope(
    const std::vector<std::pair<double, double>>& curve) {
  std::vector<std::pair<double, double>> out = curve;
  const size_t n = curve.size();
  if (n >= 3) {
    // The upper hull (monotone chain): vertex indices, each turn clockwise.
    std::vector<size_t> hull;
    for (size_t i = 0; i < n; ++i) {
      while (hull.size() >= 2) {
        const auto& [x0, y0] = curve[hull[hull.size() - 2]];
        const auto& [x1, y1] = curve[hull.back()];
        const auto& [x2, y2] = curve[i];
        // Drop the middle vertex when it lies on or under the chord from x0 to x2.
        if ((y1 - y0) * (x2 - x0) <= (y2 - y0) * (x1 - x0)) {
          hull.pop_back();
        } else {
          break;
        }
      }
      hull.push_back(i);
    }
    for (size_t k = 0; k + 1 < hull.size(); ++k) {
      const auto& [x0, y0] = curve[hull[k]];
      const auto& [x1, y1] = curve[hull[k + 1]];
      for (size_t i = hull[k] + 1; i < hull[k + 1]; ++i) {
        out[i].second = x1 > x0 ? y0 + (y1 - y0) * (curve[i].first - x0) / (x1 - x0) : y1;
      }
    }
  }
  for (size_t i = 1; i < n; ++i) out[i].second = std::max(out[i].second, out[i - 1].second);
  return out;
}

std::vector<CurveJob> curve_jobs(const std::vector<NodeRecord>& nodes) {
  std::vector<CurveJob> jobs;
  std::map<std::string, size_t> by_id;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeRecord& n = nodes[i];
    const bool curve = n.throughput_curve.size() >= 2 && !n.jobs.empty();
    const std::string id = curve ? n.jobs.front().id : "(node) " + n.node;
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      it = by_id.emplace(id, jobs.size()).first;
      CurveJob j;
      j.id = id;
      if (curve) {
        j.tier_min = n.jobs.front().tier_min;
        j.hold_tier = n.jobs.front().hold_tier >= 0 ? n.jobs.front().hold_tier : j.tier_min;
        j.pausable = n.jobs.front().pausable;
      }
      jobs.push_back(std::move(j));
    }
    CurveJob& j = jobs[it->second];
    j.nodes.push_back(i);
    j.gpus += std::max(1, n.gpus);
    j.floor_w += n.min_w;
  }
  double tiers = 0;
  for (const auto& j : jobs) tiers += j.tier_min;
  for (CurveJob& j : jobs) {
    const NodeRecord& first = nodes[j.nodes.front()];
    const double weight = tiers > 0 ? j.tier_min / tiers : 1.0 / double(jobs.size());
    if (first.throughput_curve.size() >= 2 && !first.jobs.empty()) {
      const double per_gpu = double(j.gpus) / std::max(1, first.gpus);
      j.job.name = j.id;
      for (const auto& [b, t] : upper_concave_envelope(first.throughput_curve)) {
        const double p = b * per_gpu;
        // allocation::validate: power ascending, throughput positive.
        j.job.curve.push_back({p, std::max(1e-9, weight * t)});
      }
      j.job.max_slowdown = j.hold_tier > 0 ? std::clamp(1 - j.hold_tier, 0.0, 1.0) : 1.0;
    } else {
      const double frac = std::clamp(first.min_w / std::max(first.nameplate_w, 1e-9), 1e-3, 0.999);
      j.job = allocation::job_from_pfi(j.id, first.nameplate_w, weight, 1.0, frac, 1.0);
    }
    j.tier_floor_w = allocation::floor_w(j.job);
  }
  return jobs;
}

std::vector<double> CurveAllocator::split(double budget_w,
                                          const std::vector<NodeRecord>& nodes) const {
  std::vector<CurveJob> jobs = curve_jobs(nodes);
  double floors_w = 0;
  for (const auto& j : jobs) floors_w += j.floor_w;
  if (jobs.empty() || budget_w < floors_w) return EqualAllocator().split(budget_w, nodes);
  std::vector<allocation::Job> req;
  for (const auto& j : jobs) req.push_back(j.job);
  auto a = allocation::allocate(req, budget_w, method_);
  if (!a.feasible) {
    // The tiers do not fit: every job down to its curve's floor (the caller may pause).
    for (auto& j : req) j.max_slowdown = 1;
    a = allocation::allocate(req, budget_w, method_);
  }
  if (!a.feasible) return EqualAllocator().split(budget_w, nodes);
  std::vector<double> out(nodes.size(), 0.0);
  for (size_t k = 0; k < jobs.size(); ++k) {
    for (size_t i : jobs[k].nodes) {
      const double share = a.power_w[k] * std::max(1, nodes[i].gpus) / double(jobs[k].gpus);
      out[i] = std::clamp(share, nodes[i].min_w, nodes[i].nameplate_w);
    }
  }
  // The nodes' floors may lift a share above the curve's (curves below min_w): the sum stays
  // within the budget by taking the excess back from the nodes above their floors.
  double sum = std::accumulate(out.begin(), out.end(), 0.0);
  if (sum > budget_w + 1e-6) {
    std::vector<double> lo, hi, w;
    for (size_t i = 0; i < nodes.size(); ++i) {
      lo.push_back(nodes[i].min_w);
      hi.push_back(out[i]);
      w.push_back(std::max(out[i], 1e-9));
    }
    out = water_fill(budget_w, lo, hi, w);
  }
  return out;
}

Result<std::unique_ptr<Allocator>> make_allocator(std::string_view name) {
  if (name == "curves") {
    return std::unique_ptr<Allocator>(new CurveAllocator("curves", allocation::Method::kOptimal));
  }
  // curves-<method>: any allocation method on the same curve jobs (curves-optimal = curves).
  if (name.rfind("curves-", 0) == 0) {
    auto m = allocation::parse_method(std::string(name.substr(7)));
    if (m.ok()) return std::unique_ptr<Allocator>(new CurveAllocator(std::string(name), *m));
  }
  if (name == "equal") return std::unique_ptr<Allocator>(new EqualAllocator());
  if (name == "proportional") return std::unique_ptr<Allocator>(new ProportionalAllocator());
  if (name == "pfi") {
    return std::unique_ptr<Allocator>(new JobAllocator("pfi", allocation::Method::kPfiScaled));
  }
  if (name == "greedy") {
    return std::unique_ptr<Allocator>(new JobAllocator("greedy", allocation::Method::kGreedy));
  }
  return Status::InvalidArgument(
      "allocator \"" + std::string(name) +
      "\": choose equal or proportional (per node), pfi or greedy "
      "(per job, src/allocation), curves or curves-METHOD (per job on the "
      "published curves, tiers as floors; METHOD an allocation method: greedy, equal, "
      "proportional, pfi, pfi_scaled, optimal)");
}

}  // namespace fw::fleet

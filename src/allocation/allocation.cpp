#include "allocation/allocation.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "analysis/pfi.hpp"

namespace fw::allocation {
namespace {

double pmax(const Job& j) { return j.curve.back().power_w; }
double tmax(const Job& j) { return j.curve.back().throughput; }

// Upper concave hull of the curve restricted to [lo, hi] (ends interpolated), ascending power.
std::vector<CurvePoint> hull(const Job& j, double lo, double hi) {
  std::vector<CurvePoint> pts{{lo, throughput_at(j, lo)}};
  for (const auto& p : j.curve) {
    if (p.power_w > lo && p.power_w < hi) pts.push_back(p);
  }
  if (hi > lo) pts.push_back({hi, throughput_at(j, hi)});
  std::vector<CurvePoint> h;
  for (const auto& p : pts) {
    while (h.size() >= 2) {
      const CurvePoint& a = h[h.size() - 2];
      const CurvePoint& b = h.back();
      // b on or below the chord a→p: drop it.
      const double cross = (b.power_w - a.power_w) * (p.throughput - a.throughput) -
                           (b.throughput - a.throughput) * (p.power_w - a.power_w);
      if (cross >= 0) {
        h.pop_back();
      } else {
        break;
      }
    }
    h.push_back(p);
  }
  return h;
}

double hull_at(const std::vector<CurvePoint>& h, double p) {
  if (h.size() == 1 || p <= h.front().power_w) return h.front().throughput;
  if (p >= h.back().power_w) return h.back().throughput;
  auto it = std::upper_bound(h.begin(), h.end(), p,
                             [](double x, const CurvePoint& c) { return x < c.power_w; });
  const CurvePoint& b = *it;
  const CurvePoint& a = *(it - 1);
  return a.throughput + (p - a.power_w) / (b.power_w - a.power_w) * (b.throughput - a.throughput);
}

struct Bounds {
  std::vector<double> lo, hi;
  double sum_lo = 0, sum_hi = 0;
};

Bounds bounds(const std::vector<Job>& jobs) {
  Bounds b;
  for (const auto& j : jobs) {
    b.lo.push_back(floor_w(j));
    b.hi.push_back(pmax(j));
    b.sum_lo += b.lo.back();
    b.sum_hi += b.hi.back();
  }
  return b;
}

void finish(const std::vector<Job>& jobs, Allocation& a) {
  a.throughput.resize(jobs.size());
  a.total_power_w = a.total_throughput = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    a.throughput[i] = throughput_at(jobs[i], a.power_w[i]);
    a.total_power_w += a.power_w[i];
    a.total_throughput += a.throughput[i];
  }
}

// Water-filling: cut_i = min(λ·w_i, hi_i − lo_i) with Σ cut_i = cut (cut ≤ Σ(hi − lo)).
std::vector<double> water_fill(const Bounds& b, const std::vector<double>& w, double cut) {
  const size_t n = w.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto room = [&](size_t i) { return b.hi[i] - b.lo[i]; };
  std::sort(order.begin(), order.end(),
            [&](size_t x, size_t y) { return room(x) * w[y] < room(y) * w[x]; });
  double weight = 0;
  for (double v : w) weight += v;
  double left = cut;
  std::vector<double> power(b.hi);
  size_t k = 0;
  for (; k < n; ++k) {
    const size_t i = order[k];
    if (room(i) * weight > left * w[i]) break;  // λ = left/weight does not saturate job i
    power[i] = b.lo[i];
    left -= room(i);
    weight -= w[i];
  }
  const double lambda = weight > 0 ? left / weight : 0;
  for (; k < n; ++k) {
    const size_t i = order[k];
    power[i] = b.hi[i] - std::min(room(i), lambda * w[i]);
  }
  return power;
}

// Greedy on concave hulls: remove power from the hull segments with the least throughput per
// watt first. Returns per-job power.
std::vector<double> greedy_hull(const std::vector<Job>& jobs, const Bounds& b, double cut) {
  struct Seg {
    size_t job;
    double len_w, slope;
  };
  std::vector<Seg> segs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const auto h = hull(jobs[i], b.lo[i], b.hi[i]);
    for (size_t k = 1; k < h.size(); ++k) {
      const double len = h[k].power_w - h[k - 1].power_w;
      if (len > 0) segs.push_back({i, len, (h[k].throughput - h[k - 1].throughput) / len});
    }
  }
  // Concave hulls: a job's slopes fall with power, so ascending slope takes each job top down
  // (stable sort keeps a job's equal-slope segments in any order; they are interchangeable).
  std::stable_sort(segs.begin(), segs.end(),
                   [](const Seg& x, const Seg& y) { return x.slope < y.slope; });
  std::vector<double> power(b.hi);
  double left = cut;
  for (const Seg& s : segs) {
    if (left <= 0) break;
    const double take = std::min(left, s.len_w);
    power[s.job] -= take;
    left -= take;
  }
  for (size_t i = 0; i < power.size(); ++i) power[i] = std::max(power[i], b.lo[i]);
  return power;
}

// Exact maximum of Σ curve_i(p_i) subject to Σ p_i ≤ target, lo_i ≤ p_i ≤ hi_i, by branch and
// bound on the concave hulls (Falk–Soland): a node's relaxation (greedy on the hulls of the
// restricted domains) bounds every allocation in it; a job whose curve lies below its hull at the
// relaxed point has its domain split at a curve breakpoint inside that hull segment. Every leaf's
// relaxation is exact (curve = hull at the relaxed point), so the search is exact when it ends
// within kMaxNodes; otherwise `exact` is false and upper_bound is the root's hull bound.
struct Search {
  const std::vector<Job>& jobs;
  double target_w;
  std::vector<double> best_power;
  double best = -1, root_bound = -1;
  int nodes = 0;
};
constexpr int kMaxNodes = 4000;

void branch(Search& s, Bounds b) {
  if (b.sum_lo > s.target_w * (1 + 1e-12)) return;
  if (++s.nodes > kMaxNodes) return;
  const size_t n = s.jobs.size();
  const double cut = std::max(0.0, b.sum_hi - s.target_w);
  const std::vector<double> power = cut > 0 ? greedy_hull(s.jobs, b, cut) : b.hi;
  double ub = 0, val = 0, worst_gap = 0;
  size_t worst = n;
  std::vector<std::vector<CurvePoint>> hulls(n);
  for (size_t i = 0; i < n; ++i) {
    hulls[i] = hull(s.jobs[i], b.lo[i], b.hi[i]);
    const double h = hull_at(hulls[i], power[i]), c = throughput_at(s.jobs[i], power[i]);
    ub += h;
    val += c;
    if (h - c > worst_gap) worst_gap = h - c, worst = i;
  }
  if (val > s.best) s.best = val, s.best_power = power;
  if (s.root_bound < 0) s.root_bound = ub;
  const double tol = 1e-12 * std::max(1.0, std::fabs(ub));
  if (worst == n || worst_gap <= tol || ub <= s.best + tol) return;
  // Split the worst job's domain at the curve breakpoint with the largest gap inside the hull
  // segment that holds its relaxed power.
  const auto& h = hulls[worst];
  auto seg = std::upper_bound(h.begin(), h.end(), power[worst],
                              [](double x, const CurvePoint& c) { return x < c.power_w; });
  const double a = (seg - 1)->power_w, z = seg->power_w;
  double split = -1, split_gap = -1;
  for (const auto& p : s.jobs[worst].curve) {
    if (p.power_w <= a || p.power_w >= z) continue;
    const double g = hull_at(h, p.power_w) - p.throughput;
    if (g > split_gap) split_gap = g, split = p.power_w;
  }
  if (split < 0) return;  // no breakpoint inside: the curve is the hull there
  Bounds left = b, right = b;
  left.sum_hi += split - left.hi[worst];
  left.hi[worst] = split;
  right.sum_lo += split - right.lo[worst];
  right.lo[worst] = split;
  if (power[worst] <= split) {
    branch(s, left);
    branch(s, right);
  } else {
    branch(s, right);
    branch(s, left);
  }
}

}  // namespace

Job job_from_pfi(const std::string& name, double pmax_w, double tmax, double pfi,
                 double min_power_frac, double max_slowdown) {
  Job j;
  j.name = name;
  j.max_slowdown = max_slowdown;
  j.pfi = pfi;
  const double p0 = min_power_frac * pmax_w;
  const double t0 = std::max(0.0, 1.0 - (1.0 - min_power_frac) / pfi) * tmax;
  j.curve = {{p0, t0}, {pmax_w, tmax}};
  return j;
}

const std::vector<Method>& all_methods() {
  static const std::vector<Method> m{Method::kEqual,     Method::kProportional, Method::kPfi,
                                     Method::kPfiScaled, Method::kGreedy,       Method::kOptimal};
  return m;
}

std::string method_name(Method m) {
  switch (m) {
    case Method::kEqual:
      return "equal";
    case Method::kProportional:
      return "proportional";
    case Method::kPfi:
      return "pfi";
    case Method::kPfiScaled:
      return "pfi_scaled";
    case Method::kGreedy:
      return "greedy";
    case Method::kOptimal:
      return "optimal";
  }
  return "?";
}

Result<Method> parse_method(const std::string& name) {
  for (Method m : all_methods()) {
    if (method_name(m) == name) return m;
  }
  return Status::InvalidArgument(
      "unknown method '" + name +
      "' (known: equal, proportional, pfi, pfi_scaled, greedy, optimal)");
}

Status validate(const Job& j) {
  const std::string who = "job '" + j.name + "': ";
  if (j.curve.size() < 2) return Status::InvalidArgument(who + "curve needs at least two points");
  for (size_t k = 0; k < j.curve.size(); ++k) {
    const auto& p = j.curve[k];
    if (!(p.power_w > 0) || !(p.throughput >= 0) || !std::isfinite(p.power_w) ||
        !std::isfinite(p.throughput)) {
      return Status::InvalidArgument(who + "curve point " + std::to_string(k) +
                                     ": power must be > 0 and throughput ≥ 0");
    }
    if (k > 0 && !(p.power_w > j.curve[k - 1].power_w)) {
      return Status::InvalidArgument(who + "curve power must be strictly ascending");
    }
  }
  if (!(tmax(j) > 0)) return Status::InvalidArgument(who + "uncapped throughput must be > 0");
  if (!(j.max_slowdown >= 0 && j.max_slowdown <= 1)) {
    return Status::InvalidArgument(who + "max_slowdown must be in [0, 1]");
  }
  if (j.pfi < 0 || !std::isfinite(j.pfi)) return Status::InvalidArgument(who + "pfi must be ≥ 0");
  return Status::Ok();
}

double throughput_at(const Job& j, double power_w) {
  const auto& c = j.curve;
  if (power_w <= c.front().power_w) return c.front().throughput;
  if (power_w >= c.back().power_w) return c.back().throughput;
  auto it = std::upper_bound(c.begin(), c.end(), power_w,
                             [](double p, const CurvePoint& x) { return p < x.power_w; });
  const CurvePoint& b = *it;
  const CurvePoint& a = *(it - 1);
  return a.throughput +
         (power_w - a.power_w) / (b.power_w - a.power_w) * (b.throughput - a.throughput);
}

double job_pfi(const Job& j) {
  if (j.pfi > 0) return j.pfi;
  std::vector<PfiPoint> pts;
  for (const auto& p : j.curve)
    pts.push_back({p.power_w, std::max(p.throughput, 1e-12), p.power_w});
  auto r = compute_pfi(pts, 0.005);
  return r.ok() ? *r : 1.0;
}

double floor_w(const Job& j) {
  const auto& c = j.curve;
  const double tau = (1.0 - j.max_slowdown) * tmax(j);
  for (size_t i = c.size() - 1; i > 0; --i) {
    const CurvePoint& a = c[i - 1];
    const CurvePoint& b = c[i];
    if (a.throughput >= tau) continue;
    return a.power_w +
           (tau - a.throughput) / (b.throughput - a.throughput) * (b.power_w - a.power_w);
  }
  return c.front().power_w;
}

Allocation allocate(const std::vector<Job>& jobs, double target_w, Method m) {
  Allocation a;
  a.method = m;
  const Bounds b = bounds(jobs);
  if (b.sum_lo > target_w) {
    a.feasible = false;
    a.power_w = b.lo;
  } else if (b.sum_hi <= target_w) {
    a.power_w = b.hi;
  } else {
    const double cut = b.sum_hi - target_w;
    std::vector<double> w(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      const Job& j = jobs[i];
      switch (m) {
        case Method::kEqual:
          w[i] = pmax(j);
          break;
        case Method::kProportional:
          w[i] = j.draw_w > 0 ? j.draw_w : pmax(j);
          break;
        case Method::kPfi:
          w[i] = pmax(j) / tmax(j) * job_pfi(j);
          break;
        case Method::kPfiScaled:
          w[i] = pmax(j) * pmax(j) / tmax(j) * job_pfi(j);
          break;
        default:
          break;
      }
      w[i] = std::max(w[i], 1e-12);
    }
    if (m == Method::kGreedy || m == Method::kOptimal) {
      a.power_w = greedy_hull(jobs, b, cut);
    } else {
      a.power_w = water_fill(b, w, cut);
    }
  }
  finish(jobs, a);
  if (m == Method::kOptimal && a.feasible && b.sum_hi > target_w) {
    Search search{jobs, target_w, {}, -1, -1, 0};
    branch(search, b);
    a.power_w = search.best_power;
    finish(jobs, a);
    a.exact = search.nodes <= kMaxNodes;
    a.upper_bound = a.exact ? a.total_throughput : search.root_bound;
  } else if (m == Method::kOptimal) {
    a.upper_bound = a.total_throughput;
  }
  return a;
}

double gap_closed(const Allocation& a, const Allocation& equal, const Allocation& optimal) {
  const double gap = optimal.total_throughput - equal.total_throughput;
  if (!(gap > 1e-9 * std::max(1.0, std::fabs(optimal.total_throughput)))) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return (a.total_throughput - equal.total_throughput) / gap;
}

}  // namespace fw::allocation

#include "pipeline/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

namespace fw::pipeline {
namespace {

// One cap level of a stage: the clocks it allows on each instruction.
struct Level {
  CapSetting set;
  double t[2] = {0, 0}, e[2] = {0, 0};  // forward, backward
};

// The index of the highest clock whose power on `ip` is at most cap_w; -1 when none fits.
int clock_for_cap(const InstrProfile& ip, double cap_w) {
  for (size_t i = 0; i < ip.points.size(); ++i) {
    if (ip.points[i].power_w() <= cap_w * (1 + 1e-12)) return static_cast<int>(i);
  }
  return -1;
}

std::vector<Level> stage_levels(const StageProfile& p, int s, const PlanOptions& opt) {
  const InstrProfile* ip[2] = {&p.at(s, Instr::kForward), &p.at(s, Instr::kBackward)};
  std::vector<Level> out;
  Level top;
  for (int k = 0; k < 2; ++k) {
    top.t[k] = ip[k]->points[0].time_s;
    top.e[k] = ip[k]->points[0].energy_j;
  }
  top.set = {true, 0, ip[0]->points[0].freq_mhz, ip[1]->points[0].freq_mhz};
  out.push_back(top);
  std::vector<double> caps;
  for (int k = 0; k < 2; ++k) {
    for (const auto& pt : ip[k]->points) caps.push_back(pt.power_w());
  }
  std::sort(caps.begin(), caps.end(), std::greater<>());
  int last_f = 0, last_b = 0;
  for (double c : caps) {
    if (c < opt.min_cap_w || c > opt.max_cap_w) continue;
    const int f = clock_for_cap(*ip[0], c), b = clock_for_cap(*ip[1], c);
    if (f < 0 || b < 0) continue;  // below the lowest clock's power on one instruction
    if (f == last_f && b == last_b) continue;
    last_f = f;
    last_b = b;
    Level l;
    l.set = {false, c, ip[0]->points[f].freq_mhz, ip[1]->points[b].freq_mhz};
    l.t[0] = ip[0]->points[f].time_s;
    l.e[0] = ip[0]->points[f].energy_j;
    l.t[1] = ip[1]->points[b].time_s;
    l.e[1] = ip[1]->points[b].energy_j;
    out.push_back(l);
  }
  return out;
}

struct Eval {
  double t = 0, ecomp = 0, busy = 0;
};

// The search over one mode's variables.
class Search {
 public:
  // groups: one variable per stage and group, a group being a set of phases (bit p: phase p)
  // that share one cap; a group with no ops on a stage gets no variable there.
  Search(const OneFOneB& dag, const std::vector<std::vector<Level>>& levels,
         const std::vector<int>& groups, double blocking_w, int tp)
      : dag_(dag), levels_(levels), blocking_w_(blocking_w), tp_(tp) {
    const int S = dag.stages();
    for (int s = 0; s < S; ++s) {
      for (int g : groups) {
        int ops = 0;
        for (int p = 0; p < kPhases; ++p) {
          if (!(g >> p & 1)) continue;
          const auto ph = static_cast<Phase>(p);
          ops += dag.count(s, Instr::kForward, ph) + dag.count(s, Instr::kBackward, ph);
        }
        if (ops > 0) vars_.push_back({s, g});
      }
    }
    d_.assign(static_cast<size_t>(S) * 2 * kPhases, 0.0);
  }

  size_t num_vars() const { return vars_.size(); }

  // Level of stage s in phase p under state `x`.
  int level(const std::vector<int>& x, int s, int p) const {
    for (size_t v = 0; v < vars_.size(); ++v) {
      if (vars_[v].stage == s && (vars_[v].phases >> p & 1)) return x[v];
    }
    return 0;
  }

  // Energy terms of x; with_time: also its iteration time (the critical-path pass), else t = 0.
  Eval eval(const std::vector<int>& x, bool with_time = true) {
    Eval e;
    for (size_t v = 0; v < vars_.size(); ++v) {
      const Level& l = levels_[vars_[v].stage][x[v]];
      for (int p = 0; p < kPhases; ++p) {
        if (!(vars_[v].phases >> p & 1)) continue;
        for (int k = 0; k < 2; ++k) {
          d_[OneFOneB::slot(vars_[v].stage, static_cast<Instr>(k), static_cast<Phase>(p))] = l.t[k];
          const int n = dag_.count(vars_[v].stage, static_cast<Instr>(k), static_cast<Phase>(p));
          e.ecomp += n * l.e[k];
          e.busy += n * l.t[k];
        }
      }
    }
    if (with_time) e.t = dag_.iteration_time(d_.data(), scratch_);
    return e;
  }

  // Pipeline energy (tp GPUs per stage) over a horizon h >= e.t.
  double energy(const Eval& e, double h) const {
    return tp_ * (e.ecomp + blocking_w_ * (dag_.stages() * h - e.busy));
  }

  struct Point {
    Eval e;
    std::vector<int> x;
  };

  // Greedy descent from uncapped until the time passes t_limit or nothing saves energy.
  std::vector<Point> walk(double t_limit) {
    std::vector<int> x(vars_.size(), 0);
    Eval cur = eval(x);
    std::vector<Point> pts{{cur, x}};
    while (cur.t <= t_limit) {
      const double e_cur = energy(cur, cur.t);
      int best_v = -1, best_step = 0;
      bool best_free = false;
      double best_score = 0;
      Eval best_e;
      for (size_t v = 0; v < vars_.size(); ++v) {
        const int n = static_cast<int>(levels_[vars_[v].stage].size());
        for (int step = 1; step <= 3 && x[v] + step < n; ++step) {
          x[v] += step;
          const Eval e = eval(x);
          x[v] -= step;
          const double de = e_cur - energy(e, e.t);
          if (de <= 0) continue;
          const double dt = e.t - cur.t;
          const bool free = dt <= 1e-12 * cur.t;
          const double score = free ? de : de / dt;
          if ((free && !best_free) || (free == best_free && score > best_score)) {
            best_v = static_cast<int>(v);
            best_step = step;
            best_free = free;
            best_score = score;
            best_e = e;
          }
        }
      }
      if (best_v < 0) break;
      x[best_v] += best_step;
      cur = best_e;
      pts.push_back({cur, x});
    }
    return pts;
  }

  // Greedy descent from x that keeps the time within h. Each step lowers one setting by up to
  // three levels: by_ratio false, the step with the largest saving at h; true, a step that
  // adds no time and saves most, else the one saving most per second added.
  Point descend(std::vector<int> x, double h, bool by_ratio = false) {
    Eval cur = eval(x);
    for (;;) {
      const double e_cur = energy(cur, h);
      int best_v = -1, best_step = 0;
      double best_de = 0;
      bool best_free = false;
      Eval best_e;
      for (size_t v = 0; v < vars_.size(); ++v) {
        const int n = static_cast<int>(levels_[vars_[v].stage].size());
        for (int step = 1; step <= 3 && x[v] + step < n; ++step) {
          x[v] += step;
          // The energy at h needs no critical path: skip the pass when the step cannot win.
          const double de_bound = e_cur - energy(eval(x, false), h);
          if (de_bound <= 0 || (!by_ratio && de_bound <= best_de)) {
            x[v] -= step;
            continue;
          }
          const Eval e = eval(x);
          x[v] -= step;
          if (e.t > h * (1 + 1e-12)) continue;
          const double de = e_cur - energy(e, h);
          if (de <= 0) continue;
          const double dt = e.t - cur.t;
          const bool free = !by_ratio || dt <= 1e-12 * cur.t;
          const double score = free ? de : de / dt;
          if ((free && !best_free) || (free == best_free && score > best_de)) {
            best_free = free;
            best_de = score;
            best_v = static_cast<int>(v);
            best_step = step;
            best_e = e;
          }
        }
      }
      if (best_v < 0) break;
      x[best_v] += best_step;
      cur = best_e;
    }
    return {cur, x};
  }

  // Coordinate descent within h: each setting in turn moves to its least-energy level (every
  // level tried) with the time kept within h, until a sweep changes nothing.
  Point polish(Point p, double h) {
    for (int sweep = 0; sweep < 20; ++sweep) {
      bool changed = false;
      for (size_t v = 0; v < vars_.size(); ++v) {
        const int n = static_cast<int>(levels_[vars_[v].stage].size());
        const int keep = p.x[v];
        int best = keep;
        double best_e = energy(p.e, h);
        Eval best_eval = p.e;
        for (int l = 0; l < n; ++l) {
          if (l == keep) continue;
          p.x[v] = l;
          if (energy(eval(p.x, false), h) >= best_e * (1 - 1e-12)) continue;
          const Eval e = eval(p.x);
          if (e.t > h * (1 + 1e-12)) continue;
          const double en = energy(e, h);
          if (en < best_e * (1 - 1e-12)) {
            best_e = en;
            best = l;
            best_eval = e;
          }
        }
        p.x[v] = best;
        if (best != keep) {
          p.e = best_eval;
          changed = true;
        }
      }
      if (!changed) break;
    }
    return p;
  }

  // Least energy at horizon h: the walk's best point within h, and descents from it and from
  // uncapped, each polished by coordinate descent.
  // `seed`: per-stage levels of another plan (e.g. the constant one) tried as a start too.
  Point best_at(const std::vector<Point>& walk_pts, double h, const std::vector<int>& seed) {
    std::vector<std::vector<int>> starts{std::vector<int>(vars_.size(), 0)};
    const Point* wb = nullptr;
    for (const auto& p : walk_pts) {
      if (p.e.t <= h * (1 + 1e-12) && (!wb || energy(p.e, h) < energy(wb->e, h))) wb = &p;
    }
    if (wb) starts.push_back(wb->x);
    if (!seed.empty()) {
      std::vector<int> x(vars_.size());
      for (size_t v = 0; v < vars_.size(); ++v) x[v] = seed[vars_[v].stage];
      starts.push_back(x);
    }
    // The best uniform setting (every stage and phase at its level l) within h.
    {
      std::vector<int> x(vars_.size(), 0), best_x = x;
      double best = energy(eval(x), h);
      for (int l = 1;; ++l) {
        bool any = false;
        for (size_t v = 0; v < vars_.size(); ++v) {
          const int n = static_cast<int>(levels_[vars_[v].stage].size());
          x[v] = std::min(l, n - 1);
          any = any || l < n;
        }
        if (!any) break;
        const Eval e = eval(x);
        if (e.t <= h * (1 + 1e-12) && energy(e, h) < best) {
          best = energy(e, h);
          best_x = x;
        }
      }
      starts.push_back(best_x);
    }
    Point a{eval(starts[0]), starts[0]};
    for (const auto& x0 : starts) {
      for (bool by_ratio : {false, true}) {
        Point p = polish(descend(x0, h, by_ratio), h);
        if (energy(p.e, h) < energy(a.e, h)) a = p;
      }
    }
    return a;
  }

  // Per-stage level of phase `p` (for seeding another search).
  std::vector<int> stage_levels_of(const std::vector<int>& x, int p) const {
    std::vector<int> out(static_cast<size_t>(dag_.stages()));
    for (int s = 0; s < dag_.stages(); ++s) out[s] = level(x, s, p);
    return out;
  }

  std::vector<std::array<CapSetting, kPhases>> settings(const std::vector<int>& x) const {
    std::vector<std::array<CapSetting, kPhases>> out(static_cast<size_t>(dag_.stages()));
    for (int s = 0; s < dag_.stages(); ++s) {
      for (int p = 0; p < kPhases; ++p) out[s][p] = levels_[s][level(x, s, p)].set;
    }
    return out;
  }

 private:
  struct Var {
    int stage;
    int phases;  // bit p: controls phase p
  };
  const OneFOneB& dag_;
  const std::vector<std::vector<Level>>& levels_;
  double blocking_w_;
  int tp_;
  std::vector<Var> vars_;
  std::vector<double> d_;  // op duration by OneFOneB::slot
  std::vector<double> scratch_;
};

}  // namespace

Result<Plan> plan_pipeline(const StageProfile& profile, const PlanOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  if (opt.microbatches < 1) return Status::InvalidArgument("--microbatches: must be >= 1");
  if (opt.tp < 1) return Status::InvalidArgument("--tp: must be >= 1");
  if (opt.global_batch < opt.microbatches || opt.global_batch % opt.microbatches != 0) {
    return Status::InvalidArgument("--global-batch: " + std::to_string(opt.global_batch) +
                                   " is not a multiple of --microbatches " +
                                   std::to_string(opt.microbatches));
  }
  if (!(opt.slowdown_max >= 0)) return Status::InvalidArgument("--slowdown-max: must be >= 0");
  if (!(opt.straggler_factor >= 1)) {
    return Status::InvalidArgument("--straggler-factor: must be >= 1");
  }
  if (!(opt.blocking_w > 0)) return Status::InvalidArgument("--blocking-w: must be > 0");
  if (opt.segments != 3 && opt.segments != 5) {
    return Status::InvalidArgument("--segments: must be 3 or 5");
  }
  const std::clock_t cpu_start = std::clock();
  const int S = profile.num_stages();
  OneFOneB dag(S, opt.microbatches);
  std::vector<std::vector<Level>> levels;
  for (int s = 0; s < S; ++s) levels.push_back(stage_levels(profile, s, opt));

  Plan plan;
  plan.stages = S;
  plan.microbatches = opt.microbatches;
  plan.tp = opt.tp;
  plan.pipelines = opt.global_batch / opt.microbatches;
  plan.blocking_w = opt.blocking_w;
  plan.slowdown_max = opt.slowdown_max;
  plan.straggler_factor = opt.straggler_factor;
  const double F = opt.straggler_factor;
  const int n = plan.pipelines;

  std::vector<int> seed_i, seed_s;  // the constant plan's levels seed the schedule's search
  for (int m = 0; m < 2; ++m) {
    const std::vector<int> groups =
        m == 0 ? std::vector<int>{0b11111}
               : (opt.segments == 3 ? std::vector<int>{0b00011, 0b00100, 0b11000}
                                    : std::vector<int>{1, 2, 4, 8, 16});
    Search search(dag, levels, groups, opt.blocking_w, opt.tp);
    const std::vector<int> zero(search.num_vars(), 0);
    const Eval base = search.eval(zero);
    const double t0 = base.t, e0 = search.energy(base, t0);
    plan.baseline_pipeline_time_s = t0;
    plan.baseline_pipeline_energy_j = e0;
    plan.baseline_time_s = F * t0;
    plan.baseline_energy_j = F * e0 + (n - 1) * search.energy(base, F * t0);

    const double h_i = t0 * (1 + opt.slowdown_max);
    const auto pts = search.walk(std::max(h_i, F * h_i) * 1.02);
    const auto pick = search.best_at(pts, h_i, seed_i);
    if (m == 0) seed_i = search.stage_levels_of(pick.x, 0);
    ModePlan& mp = m == 0 ? plan.constant : plan.schedule;
    mp.mode = m == 0 ? "constant" : "schedule";
    mp.stages = search.settings(pick.x);
    mp.pipeline_time_s = pick.e.t;
    mp.pipeline_energy_j = search.energy(pick.e, pick.e.t);
    if (F > 1) {
      const double h_s = F * pick.e.t;
      const auto other = search.best_at(pts, h_s, seed_s);
      if (m == 0) seed_s = search.stage_levels_of(other.x, 0);
      mp.others = search.settings(other.x);
      mp.others_time_s = other.e.t;
      mp.time_s = h_s;
      mp.energy_j = F * mp.pipeline_energy_j + (n - 1) * search.energy(other.e, h_s);
    } else {
      mp.time_s = pick.e.t;
      mp.energy_j = n * mp.pipeline_energy_j;
    }
    mp.energy_saved = 1 - mp.energy_j / plan.baseline_energy_j;
    mp.time_increase = mp.time_s / plan.baseline_time_s - 1;
    // Pareto filter of the walk, fastest first.
    std::vector<FrontierPoint> fr;
    for (const auto& p : pts) fr.push_back({p.e.t, search.energy(p.e, p.e.t)});
    std::sort(fr.begin(), fr.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
      return a.time_s < b.time_s || (a.time_s == b.time_s && a.energy_j < b.energy_j);
    });
    double e_min = std::numeric_limits<double>::infinity();
    for (const auto& p : fr) {
      if (p.energy_j < e_min) {
        mp.frontier.push_back(p);
        e_min = p.energy_j;
      }
    }
  }
  plan.planning_cpu_s = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  plan.planning_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
  return plan;
}

}  // namespace fw::pipeline

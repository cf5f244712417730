#include "pipeline/cap_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "pipeline/lp.hpp"

namespace fw::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool has(int mask, int p) { return (mask >> p & 1) != 0; }

}  // namespace

// Entries lo..hi a relaxation needs: all of them, or for a segment that runs one instruction
// only the lower convex hull of (time, cost) (a point above it is a costlier mixture of its
// neighbours at the same time).
std::vector<int> CapSearch::lp_entries(const Var& v, int lo, int hi) const {
  std::vector<int> all;
  for (int j = lo; j <= hi; ++j) all.push_back(j);
  if (v.ops[0] > 0 && v.ops[1] > 0) return all;
  const int k = v.ops[0] > 0 ? 0 : 1;
  auto t = [&](int j) { return levels_[v.stage][v.lv[j]].t[k]; };
  std::sort(all.begin(), all.end(),
            [&](int a, int b) { return t(a) < t(b) || (t(a) == t(b) && v.cost[a] < v.cost[b]); });
  std::vector<int> hull;
  for (int j : all) {
    if (!hull.empty() && t(hull.back()) == t(j)) continue;  // same time, costlier
    while (hull.size() >= 2) {
      const int a = hull[hull.size() - 2], b = hull.back();
      // b is not below the chord from a to j
      const double cross =
          (t(b) - t(a)) * (v.cost[j] - v.cost[a]) - (v.cost[b] - v.cost[a]) * (t(j) - t(a));
      if (cross <= 0) {
        hull.pop_back();
      } else {
        break;
      }
    }
    hull.push_back(j);
  }
  std::sort(hull.begin(), hull.end());
  return hull;
}

CapSearch::CapSearch(const OneFOneB& dag, std::vector<std::vector<LevelOps>> levels,
                     const std::vector<std::vector<std::vector<int>>>& segmentations,
                     double blocking_w, PathPool& pool)
    : dag_(dag), levels_(std::move(levels)), blocking_w_(blocking_w), pool_(pool) {
  const int S = dag.stages();
  stage_vars_.resize(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    const auto& L = levels_[s];
    const int nl = static_cast<int>(L.size());
    for (size_t g = 0; g < segmentations[s].size(); ++g) {
      std::vector<int> ids;
      for (int mask : segmentations[s][g]) {
        Var v;
        v.stage = s;
        v.seg = static_cast<int>(g);
        v.mask = mask;
        for (int p = 0; p < kPhases; ++p) {
          if (!has(mask, p)) continue;
          for (int k = 0; k < 2; ++k) {
            v.ops[k] += dag.count(s, static_cast<Instr>(k), static_cast<Phase>(p));
          }
        }
        std::vector<double> c(static_cast<size_t>(nl));
        for (int l = 0; l < nl; ++l) {
          c[l] = 0;
          for (int k = 0; k < 2; ++k) c[l] += v.ops[k] * (L[l].e[k] - blocking_w * L[l].t[k]);
        }
        // m is no worse than l: no costlier, no slower on an instruction the segment runs
        auto no_worse = [&](int m, int l) {
          if (c[m] > c[l]) return false;
          for (int k = 0; k < 2; ++k) {
            if (v.ops[k] > 0 && L[m].t[k] > L[l].t[k]) return false;
          }
          return true;
        };
        auto dominates = [&](int m, int l) {
          if (m == l || !no_worse(m, l)) return false;
          if (!no_worse(l, m)) return true;  // strictly better somewhere
          return m < l;                      // identical: the first is kept
        };
        std::vector<int> entry(static_cast<size_t>(nl), -1);
        for (int l = 0; l < nl; ++l) {
          bool dom = false;
          for (int m = 0; m < nl && !dom; ++m) dom = dominates(m, l);
          if (!dom) {
            entry[l] = static_cast<int>(v.lv.size());
            v.lv.push_back(l);
            v.cost.push_back(c[l]);
          }
        }
        for (int l = 0; l < nl; ++l) {
          if (entry[l] >= 0) continue;
          int best = -1;
          for (size_t j = 0; j < v.lv.size(); ++j) {
            if (no_worse(v.lv[j], l) && (best < 0 || v.cost[j] < v.cost[best])) {
              best = static_cast<int>(j);
            }
          }
          entry[l] = best;
        }
        v.entry_of_level = std::move(entry);
        ids.push_back(static_cast<int>(vars_.size()));
        vars_.push_back(std::move(v));
      }
      stage_vars_[s].push_back(std::move(ids));
    }
  }
  d_.assign(static_cast<size_t>(S) * 2 * kPhases, 0.0);
}

std::vector<std::pair<int, int>> CapSearch::vars_of(int s, int g) const {
  std::vector<std::pair<int, int>> out;
  for (int id : stage_vars_[s][g]) out.push_back({id, vars_[id].mask});
  return out;
}

CapSearch::Choice CapSearch::baseline() const {
  Choice c;
  c.seg.assign(stage_vars_.size(), 0);
  c.level.assign(vars_.size(), 0);
  return c;
}

double CapSearch::cost_of(const Choice& c) const {
  double cost = 0;
  for (size_t s = 0; s < stage_vars_.size(); ++s) {
    for (int id : stage_vars_[s][c.seg[s]]) {
      const Var& v = vars_[id];
      const LevelOps& l = levels_[s][c.level[id]];
      for (int k = 0; k < 2; ++k) cost += v.ops[k] * (l.e[k] - blocking_w_ * l.t[k]);
    }
  }
  return cost;
}

double CapSearch::time_of(const Choice& c) {
  std::fill(d_.begin(), d_.end(), 0.0);
  for (size_t s = 0; s < stage_vars_.size(); ++s) {
    for (int id : stage_vars_[s][c.seg[s]]) {
      const LevelOps& l = levels_[s][c.level[id]];
      for (int p = 0; p < kPhases; ++p) {
        if (!has(vars_[id].mask, p)) continue;
        for (int k = 0; k < 2; ++k) {
          d_[OneFOneB::slot(static_cast<int>(s), static_cast<Instr>(k), static_cast<Phase>(p))] =
              l.t[k];
        }
      }
    }
  }
  return dag_.iteration_time(d_.data(), scratch_);
}

CapSearch::Sol CapSearch::from_choice(const Choice& c) const {
  Sol s;
  s.seg = c.seg;
  s.ent.assign(vars_.size(), 0);
  for (size_t v = 0; v < vars_.size(); ++v) s.ent[v] = vars_[v].entry_of_level[c.level[v]];
  return s;
}

CapSearch::Choice CapSearch::to_choice(const Sol& s) const {
  Choice c;
  c.seg = s.seg;
  c.level.assign(vars_.size(), 0);
  for (size_t v = 0; v < vars_.size(); ++v) c.level[v] = vars_[v].lv[s.ent[v]];
  return c;
}

void CapSearch::durations(const Sol& sol, std::vector<double>& d) const {
  std::fill(d.begin(), d.end(), 0.0);
  for (size_t s = 0; s < stage_vars_.size(); ++s) {
    for (int id : stage_vars_[s][sol.seg[s]]) {
      const Var& v = vars_[id];
      const LevelOps& l = levels_[s][v.lv[sol.ent[id]]];
      for (int p = 0; p < kPhases; ++p) {
        if (!has(v.mask, p)) continue;
        for (int k = 0; k < 2; ++k) {
          d[OneFOneB::slot(static_cast<int>(s), static_cast<Instr>(k), static_cast<Phase>(p))] =
              l.t[k];
        }
      }
    }
  }
}

void CapSearch::evaluate(Sol& sol) {
  durations(sol, d_);
  sol.t = dag_.iteration_time(d_.data(), scratch_);
  sol.cost = 0;
  for (size_t s = 0; s < stage_vars_.size(); ++s) {
    for (int id : stage_vars_[s][sol.seg[s]]) sol.cost += vars_[id].cost[sol.ent[id]];
  }
  sol.obj = sol.cost + w_ * sol.t;
}

int CapSearch::add_paths(const std::vector<double>& d, double limit) {
  dag_.iteration_time(d.data(), scratch_);
  const auto& ops = dag_.ops();
  // candidate ends: the last op of each stage (ops are in a topological order)
  std::vector<int> last(static_cast<size_t>(dag_.stages()), -1);
  for (size_t i = 0; i < ops.size(); ++i) last[ops[i].stage] = static_cast<int>(i);
  int added = 0;
  for (int end : last) {
    if (end < 0 || scratch_[end] <= limit * (1 + 1e-9)) continue;
    std::vector<int> cnt(d.size(), 0);
    for (int i = end; i >= 0;) {
      const auto& op = ops[i];
      ++cnt[OneFOneB::slot(op.stage, op.instr, op.phase)];
      int next = -1;
      double best = -kInf;
      if (op.prev >= 0 && scratch_[op.prev] > best) {
        best = scratch_[op.prev];
        next = op.prev;
      }
      if (op.dep >= 0 && scratch_[op.dep] > best) next = op.dep;
      i = next;
    }
    if (pool_.seen.insert(cnt).second) {
      pool_.paths.push_back(std::move(cnt));
      ++added;
    }
  }
  return added;
}

CapSearch::Relaxed CapSearch::relax(const Node& n, double h) {
  Relaxed r;
  const int S = dag_.stages();
  for (int round = 0; round < 400; ++round) {
    LinearProgram lp;
    std::vector<std::vector<int>> col(vars_.size());  // per var, per kept entry: column or -1
    std::vector<std::vector<int>> ycol(static_cast<size_t>(S));
    auto add_col = [&](double cost) {
      lp.cost.push_back(cost);
      return lp.num_vars++;
    };
    for (int s = 0; s < S; ++s) {
      const int ng = static_cast<int>(stage_vars_[s].size());
      const bool multi = __builtin_popcount(n.segs[s]) > 1;
      ycol[s].assign(static_cast<size_t>(ng), -1);
      LinearProgram::Row one{{}, true, 1};
      for (int g = 0; g < ng; ++g) {
        if (!(n.segs[s] >> g & 1)) continue;
        if (multi) {
          ycol[s][g] = add_col(0);
          one.terms.push_back({ycol[s][g], 1});
        }
        for (int id : stage_vars_[s][g]) {
          const Var& v = vars_[id];
          col[id].assign(v.lv.size(), -1);
          // One segment of a mixed segmentation: its levels' weights add up to y_g, written
          // y_g − Σ λ ≤ 0 when every level costs more than nothing (then no optimum puts more
          // weight on it, and a ≤ row with zero on the right is no degenerate artificial)
          const auto entries = lp_entries(v, n.range[id].first, n.range[id].second);
          bool positive = true;
          for (int j : entries) positive = positive && v.cost[j] > 0;
          LinearProgram::Row row{{}, !multi || !positive, multi ? 0.0 : 1.0};
          for (int j : entries) {
            col[id][j] = add_col(v.cost[j] / scale_);
            row.terms.push_back({col[id][j], row.equality ? 1.0 : -1.0});
          }
          if (multi) row.terms.push_back({ycol[s][g], row.equality ? -1.0 : 1.0});
          lp.rows.push_back(std::move(row));
        }
      }
      if (multi) lp.rows.push_back(std::move(one));
    }
    int tcol = -1;  // τ / h, when time is priced
    if (w_ > 0) {
      tcol = add_col(w_ * h / scale_);
      lp.rows.push_back({{{tcol, 1}}, false, 1});
    }
    for (const auto& path : pool_.paths) {
      LinearProgram::Row row{{}, false, tcol >= 0 ? 0.0 : 1.0};
      if (tcol >= 0) row.terms.push_back({tcol, -1});
      for (size_t id = 0; id < vars_.size(); ++id) {
        if (col[id].empty()) continue;
        const Var& v = vars_[id];
        double ns[2] = {0, 0};
        for (int p = 0; p < kPhases; ++p) {
          if (!has(v.mask, p)) continue;
          for (int k = 0; k < 2; ++k) {
            ns[k] += path[OneFOneB::slot(v.stage, static_cast<Instr>(k), static_cast<Phase>(p))];
          }
        }
        if (ns[0] == 0 && ns[1] == 0) continue;
        for (size_t j = 0; j < col[id].size(); ++j) {
          if (col[id][j] < 0) continue;
          const LevelOps& l = levels_[v.stage][v.lv[j]];
          row.terms.push_back({col[id][j], (ns[0] * l.t[0] + ns[1] * l.t[1]) / h});
        }
      }
      lp.rows.push_back(std::move(row));
    }
    const LpSolution sol = solve_lp(lp);
    if (sol.status == LpSolution::Status::kInfeasible) return r;  // no plan in this node
    if (sol.status != LpSolution::Status::kOptimal) {
      r.failed = true;
      return r;
    }
    r.feasible = true;
    r.bound = sol.objective * scale_;
    r.lambda.assign(vars_.size(), {});
    r.y.assign(static_cast<size_t>(S), {});
    std::vector<double> d(d_.size(), 0.0);
    for (size_t id = 0; id < vars_.size(); ++id) {
      if (col[id].empty()) continue;
      const Var& v = vars_[id];
      r.lambda[id].assign(v.lv.size(), 0.0);
      for (size_t j = 0; j < col[id].size(); ++j) {
        if (col[id][j] < 0) continue;
        const double w = sol.x[col[id][j]];
        r.lambda[id][j] = w;
        if (w == 0) continue;
        const LevelOps& l = levels_[v.stage][v.lv[j]];
        for (int p = 0; p < kPhases; ++p) {
          if (!has(v.mask, p)) continue;
          for (int k = 0; k < 2; ++k) {
            d[OneFOneB::slot(v.stage, static_cast<Instr>(k), static_cast<Phase>(p))] += w * l.t[k];
          }
        }
      }
    }
    for (int s = 0; s < S; ++s) {
      r.y[s].assign(stage_vars_[s].size(), 0.0);
      for (size_t g = 0; g < stage_vars_[s].size(); ++g) {
        if (!(n.segs[s] >> g & 1)) continue;
        r.y[s][g] = ycol[s][g] >= 0 ? sol.x[ycol[s][g]] : 1.0;
      }
    }
    const double tau = tcol >= 0 ? sol.x[tcol] : 1.0;
    if (add_paths(d, tau * h) == 0) return r;
  }
  r.failed = true;  // rows kept coming: treat the node as unexplored
  return r;
}

void CapSearch::repair(Sol& s, double h) {
  const auto& ops = dag_.ops();
  for (int guard = 0; guard < 4 * num_vars() + 4 && !feasible(s, h); ++guard) {
    // the critical path's slots; every segment on it moves to its safe (fastest) level
    durations(s, d_);
    dag_.iteration_time(d_.data(), scratch_);
    int end =
        static_cast<int>(std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin());
    std::vector<char> on(d_.size(), 0);
    for (int i = end; i >= 0;) {
      const auto& op = ops[i];
      on[OneFOneB::slot(op.stage, op.instr, op.phase)] = 1;
      int next = -1;
      double best = -kInf;
      if (op.prev >= 0 && scratch_[op.prev] > best) {
        best = scratch_[op.prev];
        next = op.prev;
      }
      if (op.dep >= 0 && scratch_[op.dep] > best) next = op.dep;
      i = next;
    }
    bool changed = false;
    for (size_t st = 0; st < stage_vars_.size(); ++st) {
      for (int id : stage_vars_[st][s.seg[st]]) {
        const Var& v = vars_[id];
        const int safe = v.entry_of_level[0];
        if (s.ent[id] == safe) continue;
        bool hit = false;
        for (int p = 0; p < kPhases && !hit; ++p) {
          for (int k = 0; k < 2 && has(v.mask, p); ++k) {
            hit = hit || on[OneFOneB::slot(v.stage, static_cast<Instr>(k), static_cast<Phase>(p))];
          }
        }
        if (hit) {
          s.ent[id] = safe;
          changed = true;
        }
      }
    }
    if (!changed) {  // nothing left on the path to speed up: every segment at its safe level
      for (size_t id = 0; id < vars_.size(); ++id) s.ent[id] = vars_[id].entry_of_level[0];
    }
    evaluate(s);
  }
}

void CapSearch::polish(Sol& s, double h, const Node* n) {
  const double tiny = 1e-12 * scale_;
  auto descend = [&](Sol& x, const std::vector<int>& ids) {
    for (int sweep = 0; sweep < 50; ++sweep) {
      bool changed = false;
      for (int id : ids) {
        const Var& v = vars_[id];
        const int lo = n ? n->range[id].first : 0;
        const int hi = n ? n->range[id].second : static_cast<int>(v.lv.size()) - 1;
        // cheaper levels nearest first (least saving, least slowdown), and when time is priced
        // costlier ones nearest first; in each direction two misses in a row end the scan
        std::vector<int> down, up;
        for (int j = lo; j <= hi; ++j) {
          if (v.cost[j] < v.cost[x.ent[id]] - tiny) down.push_back(j);
          if (w_ > 0 && v.cost[j] > v.cost[x.ent[id]] + tiny) up.push_back(j);
        }
        std::sort(down.begin(), down.end(), [&](int a, int b) { return v.cost[a] > v.cost[b]; });
        std::sort(up.begin(), up.end(), [&](int a, int b) { return v.cost[a] < v.cost[b]; });
        const Sol keep = x;
        Sol best = x;
        for (const auto* order : {&down, &up}) {
          int misses = 0;
          for (int j : *order) {
            x.ent[id] = j;
            evaluate(x);
            if (feasible(x, h) && x.obj < best.obj - tiny) {
              best = x;
              misses = 0;
            } else if (++misses >= 2) {
              break;
            }
          }
        }
        x = best;
        changed = changed || x.ent[id] != keep.ent[id];
      }
      if (!changed) break;
    }
  };
  std::vector<int> all;
  for (size_t st = 0; st < stage_vars_.size(); ++st) {
    for (int id : stage_vars_[st][s.seg[st]]) all.push_back(id);
  }
  descend(s, all);
  // another segmentation of one stage: its segments start at the fastest level any of their
  // phases had, then descend
  for (int round = 0; round < 4; ++round) {
    bool improved = false;
    for (size_t st = 0; st < stage_vars_.size(); ++st) {
      for (size_t g = 0; g < stage_vars_[st].size(); ++g) {
        if (static_cast<int>(g) == s.seg[st] || (n && !(n->segs[st] >> g & 1))) continue;
        Sol x = s;
        x.seg[st] = static_cast<int>(g);
        std::vector<int> ids = stage_vars_[st][g];
        for (int id : ids) {
          const Var& v = vars_[id];
          int lv = std::numeric_limits<int>::max();
          for (int old : stage_vars_[st][s.seg[st]]) {
            if (vars_[old].mask & v.mask) lv = std::min(lv, vars_[old].lv[s.ent[old]]);
          }
          x.ent[id] = v.entry_of_level[lv];
          if (n) x.ent[id] = std::clamp(x.ent[id], n->range[id].first, n->range[id].second);
        }
        evaluate(x);
        if (!feasible(x, h)) continue;
        descend(x, ids);
        if (x.obj < s.obj - tiny) {
          s = x;
          improved = true;
        }
      }
    }
    if (!improved) break;
    descend(s, all);
  }
}

void CapSearch::align(Sol& s, double h) {
  const double tiny = 1e-12 * scale_;
  // stages with the same level table (the same profile) form a class
  const int S = dag_.stages();
  std::vector<int> cls(static_cast<size_t>(S));
  for (int st = 0; st < S; ++st) {
    cls[st] = st;
    for (int o = 0; o < st && cls[st] == st; ++o) {
      bool same = levels_[o].size() == levels_[st].size();
      for (size_t l = 0; same && l < levels_[st].size(); ++l) {
        for (int k = 0; k < 2; ++k) {
          same = same && levels_[o][l].t[k] == levels_[st][l].t[k] &&
                 levels_[o][l].e[k] == levels_[st][l].e[k];
        }
      }
      if (same) cls[st] = o;
    }
  }
  // (phase, class) -> the plan's segments running that phase on stages of that class
  std::map<std::pair<int, int>, std::vector<int>> groups;
  for (int st = 0; st < S; ++st) {
    for (int id : stage_vars_[st][s.seg[st]]) {
      for (int p = 0; p < kPhases; ++p) {
        if (has(vars_[id].mask, p)) groups[{p, cls[st]}].push_back(id);
      }
    }
  }
  bool any = false;
  for (int round = 0; round < 4; ++round) {
    bool improved = false;
    for (const auto& [key, ids] : groups) {
      // every run of consecutive stages in the group, every level near the ones in use
      const int n = static_cast<int>(ids.size());
      for (int i = 0; i < n; ++i) {
        for (int j = i + 1; j < n; ++j) {
          int lo = std::numeric_limits<int>::max(), hi = 0;
          for (int q = i; q <= j; ++q) {
            lo = std::min(lo, vars_[ids[q]].lv[s.ent[ids[q]]]);
            hi = std::max(hi, vars_[ids[q]].lv[s.ent[ids[q]]]);
          }
          for (int l = std::max(0, lo - 2); l <= hi + 2; ++l) {
            Sol x = s;
            bool ok = true;
            for (int q = i; q <= j && ok; ++q) {
              const Var& v = vars_[ids[q]];
              ok = l < static_cast<int>(v.entry_of_level.size());
              if (ok) x.ent[ids[q]] = v.entry_of_level[l];
            }
            if (!ok) break;
            evaluate(x);
            if (feasible(x, h) && x.obj < s.obj - tiny) {
              s = std::move(x);
              improved = any = true;
            }
          }
        }
      }
    }
    if (!improved) break;
  }
  if (any) polish(s, h, nullptr);
}

bool CapSearch::dive(Relaxed r, Node n, double h, Sol& out) {
  const int S = dag_.stages();
  for (int step = 0; step < num_vars() + S + 1; ++step) {
    if (!r.feasible || r.failed) return false;
    // a stage still mixing segmentations: fix the heaviest
    int fs = -1, fg = -1;
    for (int s = 0; s < S && fs < 0; ++s) {
      if (__builtin_popcount(n.segs[s]) < 2) continue;
      int g = -1;
      for (size_t q = 0; q < r.y[s].size(); ++q) {
        if ((n.segs[s] >> q & 1) && (g < 0 || r.y[s][q] > r.y[s][g])) g = static_cast<int>(q);
      }
      fs = s;
      fg = g;
    }
    if (fs >= 0) {
      n.segs[fs] = 1u << fg;
      r = relax(n, h);
      continue;
    }
    int bv = -1, bj = -1;
    double best = -1;
    for (size_t id = 0; id < vars_.size(); ++id) {
      if (r.lambda[id].empty()) continue;
      if (n.range[id].first == n.range[id].second) continue;
      const auto it = std::max_element(r.lambda[id].begin(), r.lambda[id].end());
      if (*it > 1 - 1e-7) continue;  // integral already
      if (*it > best) {
        best = *it;
        bv = static_cast<int>(id);
        bj = static_cast<int>(it - r.lambda[id].begin());
      }
    }
    if (bv < 0) break;  // integral
    Node t = n;
    t.range[bv] = {bj, bj};
    if (best >= 0.9) {  // every mixture as decided as that: fixed together
      for (size_t id = 0; id < vars_.size(); ++id) {
        if (r.lambda[id].empty() || n.range[id].first == n.range[id].second) continue;
        const auto it = std::max_element(r.lambda[id].begin(), r.lambda[id].end());
        if (*it >= 0.9 && *it <= 1 - 1e-7) {
          const int j = static_cast<int>(it - r.lambda[id].begin());
          t.range[id] = {j, j};
        }
      }
    }
    Relaxed rt = relax(t, h);
    if ((!rt.feasible || rt.failed) && best >= 0.9) {  // together they do not fit: one alone
      t = n;
      t.range[bv] = {bj, bj};
      rt = relax(t, h);
    }
    if (!rt.feasible || rt.failed) {  // the heaviest level does not fit: the fastest one used
      int jf = bj;
      for (int j = n.range[bv].first; j <= bj; ++j) {
        if (r.lambda[bv][j] > 1e-9) {
          jf = j;
          break;
        }
      }
      t.range[bv] = {jf, jf};
      rt = relax(t, h);
      if (!rt.feasible || rt.failed) return false;
    }
    n = std::move(t);
    r = std::move(rt);
  }
  Sol s;
  s.seg.assign(static_cast<size_t>(S), 0);
  s.ent.assign(vars_.size(), 0);
  for (int st = 0; st < S; ++st) s.seg[st] = __builtin_ctz(n.segs[st]);
  for (size_t id = 0; id < vars_.size(); ++id) {
    s.ent[id] = vars_[id].entry_of_level[0];
    if (r.lambda.size() > id && !r.lambda[id].empty()) {
      s.ent[id] = static_cast<int>(std::max_element(r.lambda[id].begin(), r.lambda[id].end()) -
                                   r.lambda[id].begin());
    }
  }
  evaluate(s);
  repair(s, h);
  polish(s, h, nullptr);
  if (!feasible(s, h)) return false;
  out = std::move(s);
  return true;
}

void CapSearch::two_opt(Sol& s, double h) {
  const double tiny = 1e-12 * scale_;
  std::vector<int> all;
  for (size_t st = 0; st < stage_vars_.size(); ++st) {
    for (int id : stage_vars_[st][s.seg[st]]) all.push_back(id);
  }
  for (int round = 0; round < 8; ++round) {
    bool improved = false;
    for (size_t ia = 0; ia < all.size(); ++ia) {
      for (size_t ib = ia + 1; ib < all.size(); ++ib) {
        const int a = all[ia], b = all[ib];
        const int na = static_cast<int>(vars_[a].lv.size()),
                  nb = static_cast<int>(vars_[b].lv.size());
        const int ka = s.ent[a], kb = s.ent[b];
        for (int da = -2; da <= 2; ++da) {
          for (int db = -2; db <= 2; ++db) {
            if (da == 0 || db == 0 || ka + da < 0 || ka + da >= na || kb + db < 0 ||
                kb + db >= nb) {
              continue;
            }
            const double dc = vars_[a].cost[ka + da] - vars_[a].cost[ka] + vars_[b].cost[kb + db] -
                              vars_[b].cost[kb];
            if (w_ == 0 && dc >= -tiny) continue;
            Sol x = s;
            x.ent[a] = ka + da;
            x.ent[b] = kb + db;
            evaluate(x);
            if (feasible(x, h) && x.obj < s.obj - tiny) {
              s = std::move(x);
              improved = true;
              break;
            }
          }
          if (improved) break;
        }
        if (improved) break;
      }
      if (improved) break;
    }
    if (!improved) break;
    polish(s, h, nullptr);
  }
}

CapSearch::Sol CapSearch::round(const Relaxed& r, const Node& n, double h) {
  Sol s;
  const int S = dag_.stages();
  s.seg.assign(static_cast<size_t>(S), 0);
  s.ent.assign(vars_.size(), 0);
  for (int st = 0; st < S; ++st) {
    int g = -1;
    for (size_t q = 0; q < r.y[st].size(); ++q) {
      if ((n.segs[st] >> q & 1) && (g < 0 || r.y[st][q] > r.y[st][g])) g = static_cast<int>(q);
    }
    s.seg[st] = g;
  }
  for (size_t id = 0; id < vars_.size(); ++id) {
    s.ent[id] = vars_[id].entry_of_level[0];
    if (r.lambda[id].empty()) continue;
    for (size_t j = 0; j < r.lambda[id].size(); ++j) {
      if (r.lambda[id][j] > 1e-9) {
        s.ent[id] = static_cast<int>(j);
        break;
      }
    }
  }
  evaluate(s);
  repair(s, h);
  polish(s, h, nullptr);
  return s;
}

CapSearch::Outcome CapSearch::minimise(double h, double time_weight,
                                       const std::vector<Choice>& starts, int max_nodes) {
  const int S = dag_.stages();
  w_ = time_weight;
  Sol inc = from_choice(baseline());
  for (size_t id = 0; id < vars_.size(); ++id) inc.ent[id] = vars_[id].entry_of_level[0];
  evaluate(inc);
  scale_ = std::max(1e-9, std::abs(inc.obj) + blocking_w_ * S * h);
  const double tol = 1e-7 * scale_;  // above the relaxation's perturbation (lp.hpp)
  for (const auto& c : starts) {
    Sol x = from_choice(c);
    evaluate(x);
    if (feasible(x, h) && (!feasible(inc, h) || x.obj < inc.obj)) inc = x;
  }
  repair(inc, h);
  polish(inc, h, nullptr);

  Node root;
  root.range.resize(vars_.size());
  for (size_t id = 0; id < vars_.size(); ++id) {
    root.range[id] = {0, static_cast<int>(vars_[id].lv.size()) - 1};
  }
  root.segs.resize(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) root.segs[s] = (1u << stage_vars_[s].size()) - 1;
  root.parent_bound = -kInf;
  std::vector<Node> stack{root};
  std::vector<double> unexplored;  // bounds of nodes whose relaxation failed
  Outcome out;
  while (!stack.empty() && out.nodes < max_nodes) {
    // best first: the least bound; among equal bounds the last pushed (the preferred child)
    size_t pick = stack.size() - 1;
    for (size_t i = stack.size(); i-- > 0;) {
      if (stack[i].parent_bound < stack[pick].parent_bound) pick = i;
    }
    Node n = std::move(stack[pick]);
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(pick));
    if (n.parent_bound >= inc.obj - tol) continue;
    const Relaxed r = relax(n, h);
    ++out.nodes;
    if (r.failed) {
      unexplored.push_back(n.parent_bound);
      continue;
    }
    if (!r.feasible || r.bound >= inc.obj - tol) continue;
    if (n.depth <= 2 || out.nodes % 16 == 0) {
      Sol x = round(r, n, h);
      if (feasible(x, h) && x.obj < inc.obj) inc = x;
      if (n.depth == 0 && max_nodes >= 8) {
        const bool ok = dive(r, n, h, x);
        if (ok && x.obj < inc.obj) inc = x;
      }
      if (r.bound >= inc.obj - tol) continue;
    }
    // branch on a stage's segmentation first, then on a segment's level
    bool branched = false;
    for (int s = 0; s < S && !branched; ++s) {
      if (__builtin_popcount(n.segs[s]) < 2) continue;
      int g = -1;
      for (size_t q = 0; q < r.y[s].size(); ++q) {
        if ((n.segs[s] >> q & 1) && (g < 0 || r.y[s][q] > r.y[s][g])) g = static_cast<int>(q);
      }
      if (r.y[s][g] > 1 - 1e-7) continue;
      Node a = n, b = n;
      a.segs[s] = 1u << g;
      b.segs[s] = n.segs[s] & ~(1u << g);
      a.parent_bound = b.parent_bound = r.bound;
      a.depth = b.depth = n.depth + 1;
      stack.push_back(std::move(b));
      stack.push_back(std::move(a));
      branched = true;
    }
    if (branched) continue;
    // the mixture whose levels' costs spread most about its mean (weighted): where rounding
    // loses most
    int bv = -1;
    double spread = 0;
    for (size_t id = 0; id < vars_.size(); ++id) {
      if (r.lambda[id].empty()) continue;
      const double y = r.y[vars_[id].stage][vars_[id].seg];
      if (y < 1e-9) continue;
      const double mx = *std::max_element(r.lambda[id].begin(), r.lambda[id].end());
      if (1 - mx / y <= 1e-7) continue;
      double mean = 0;
      for (size_t j = 0; j < r.lambda[id].size(); ++j) mean += r.lambda[id][j] * vars_[id].cost[j];
      mean /= y;
      double dev = 0;
      for (size_t j = 0; j < r.lambda[id].size(); ++j) {
        dev += r.lambda[id][j] * std::abs(vars_[id].cost[j] - mean);
      }
      if (bv < 0 || dev > spread) {
        spread = dev;
        bv = static_cast<int>(id);
      }
    }
    if (bv < 0) {  // integral: the relaxation's plan is feasible (no path is left longer than h)
      Sol x;
      x.seg.assign(static_cast<size_t>(S), 0);
      x.ent.assign(vars_.size(), 0);
      for (int s = 0; s < S; ++s) {
        for (size_t q = 0; q < r.y[s].size(); ++q) {
          if (r.y[s][q] > 0.5) x.seg[s] = static_cast<int>(q);
        }
      }
      for (size_t id = 0; id < vars_.size(); ++id) {
        if (r.lambda[id].empty()) continue;
        x.ent[id] = static_cast<int>(std::max_element(r.lambda[id].begin(), r.lambda[id].end()) -
                                     r.lambda[id].begin());
      }
      evaluate(x);
      if (feasible(x, h) && x.obj < inc.obj) inc = x;
      if (!feasible(x, h)) unexplored.push_back(r.bound);  // numerical: cannot close the node
      continue;
    }
    const auto& lam = r.lambda[bv];
    int jmin = -1, jmax = -1;
    double wsum = 0, jsum = 0;
    for (size_t j = 0; j < lam.size(); ++j) {
      if (lam[j] <= 1e-9) continue;
      if (jmin < 0) jmin = static_cast<int>(j);
      jmax = static_cast<int>(j);
      wsum += lam[j];
      jsum += lam[j] * static_cast<double>(j);
    }
    const int m = std::clamp(static_cast<int>(std::floor(jsum / wsum)), jmin, jmax - 1);
    Node a = n, b = n;
    a.range[bv].second = m;
    b.range[bv].first = m + 1;
    a.parent_bound = b.parent_bound = r.bound;
    a.depth = b.depth = n.depth + 1;
    double wa = 0;
    for (int j = jmin; j <= m; ++j) wa += lam[j];
    if (wa >= wsum / 2) {
      stack.push_back(std::move(b));
      stack.push_back(std::move(a));
    } else {
      stack.push_back(std::move(a));
      stack.push_back(std::move(b));
    }
  }
  double bound = inc.obj;
  bool open = false;
  for (const Node& n : stack) {
    if (n.parent_bound < inc.obj - tol) {
      bound = std::min(bound, n.parent_bound);
      open = true;
    }
  }
  for (double b : unexplored) {
    if (b < inc.obj - tol) {
      bound = std::min(bound, b);
      open = true;
    }
  }
  if (max_nodes >= 8) {
    align(inc, h);
    two_opt(inc, h);
  }
  out.best = to_choice(inc);
  out.cost = inc.cost;
  out.time_s = inc.t;
  out.objective = inc.obj;
  out.bound = bound;
  out.optimal = !open;
  return out;
}

}  // namespace fw::pipeline

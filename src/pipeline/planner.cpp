#include "pipeline/planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>

#include "pipeline/cap_search.hpp"
#include "pipeline/segments.hpp"

namespace fw::pipeline {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One cap level of a stage: its setting and the clocks' op times and energies.
struct Level {
  CapSetting set;
  LevelOps ops;
};

// The index of the highest clock whose power on `ip` is at most cap_w; -1 when none fits.
int clock_for_cap(const InstrProfile& ip, double cap_w) {
  for (size_t i = 0; i < ip.points.size(); ++i) {
    if (ip.points[i].power_w() <= cap_w * (1 + 1e-12)) return static_cast<int>(i);
  }
  return -1;
}

// Level 0: no cap written (the GPU's maximum, or the profile's top clock with allow_above_max);
// then each cap, highest first, that gives another pair of clocks.
Result<std::vector<Level>> stage_levels(const StageProfile& p, int s, const PlanOptions& opt) {
  const InstrProfile* ip[2] = {&p.at(s, Instr::kForward), &p.at(s, Instr::kBackward)};
  const double ceiling = opt.allow_above_max ? kInf : opt.max_cap_w;
  auto make = [&](bool uncapped, double cap_w, int f, int b) {
    Level l;
    l.set = {uncapped, cap_w, ip[0]->points[f].freq_mhz, ip[1]->points[b].freq_mhz};
    const int idx[2] = {f, b};
    for (int k = 0; k < 2; ++k) {
      l.ops.t[k] = ip[k]->points[idx[k]].time_s;
      l.ops.e[k] = ip[k]->points[idx[k]].energy_j;
    }
    return l;
  };
  const int f0 = clock_for_cap(*ip[0], ceiling), b0 = clock_for_cap(*ip[1], ceiling);
  if (f0 < 0 || b0 < 0) {
    return Status::InvalidArgument("stage " + std::to_string(s) + " " +
                                   (f0 < 0 ? "forward" : "backward") +
                                   ": no profiled clock draws at most the GPU's maximum cap " +
                                   std::to_string(static_cast<int>(opt.max_cap_w)) +
                                   " W (--allow-above-max plans with the profile's clocks)");
  }
  std::vector<Level> out{make(true, 0, f0, b0)};
  std::vector<double> caps;
  for (int k = 0; k < 2; ++k) {
    for (const auto& pt : ip[k]->points) caps.push_back(pt.power_w());
  }
  std::sort(caps.begin(), caps.end(), std::greater<>());
  const double hi = std::min(opt.cap_limit_w, ceiling);
  int last_f = f0, last_b = b0;
  for (double c : caps) {
    if (c < opt.min_cap_w || c > hi) continue;
    const int f = clock_for_cap(*ip[0], c), b = clock_for_cap(*ip[1], c);
    if (f < 0 || b < 0) continue;  // below the lowest clock's power on one instruction
    if (f == last_f && b == last_b) continue;
    last_f = f;
    last_b = b;
    out.push_back(make(false, c, f, b));
  }
  return out;
}

// Each segment's start_s (planner.hpp PlanSegment) under choice c: the 1F1B timeline at the
// chosen levels, each stage's phase starting with its first op.
void segment_starts(const OneFOneB& dag, const CapSearch& search,
                    const std::vector<std::vector<LevelOps>>& level_ops, const CapSearch::Choice& c,
                    std::vector<std::vector<PlanSegment>>& segments) {
  const int S = dag.stages();
  std::vector<double> slot_s(static_cast<size_t>(S) * 2 * kPhases, 0.0), end_s;
  for (int s = 0; s < S; ++s) {
    for (const auto& [id, mask] : search.vars_of(s, c.seg[s])) {
      const LevelOps& l = level_ops[s][c.level[id]];
      for (int p = 0; p < kPhases; ++p) {
        if (!(mask >> p & 1)) continue;
        for (int k = 0; k < 2; ++k) {
          slot_s[OneFOneB::slot(s, static_cast<Instr>(k), static_cast<Phase>(p))] = l.t[k];
        }
      }
    }
  }
  dag.iteration_time(slot_s.data(), end_s);
  std::vector<std::array<double, kPhases>> first(static_cast<size_t>(S));
  for (auto& f : first) f.fill(kInf);
  const auto& ops = dag.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    const OneFOneB::Op& o = ops[i];
    const int p = static_cast<int>(o.phase);
    double& f = first[o.stage][p];
    f = std::min(f, end_s[i] - slot_s[OneFOneB::slot(o.stage, o.instr, o.phase)]);
  }
  for (int s = 0; s < S; ++s) {
    // The stage's phases with ops, in time order; a segment is a cyclic run of them.
    std::vector<int> with_ops;
    for (int p = 0; p < kPhases; ++p) {
      if (std::isfinite(first[s][p])) with_ops.push_back(p);
    }
    const size_t n = with_ops.size();
    for (PlanSegment& g : segments[s]) {
      // It starts at its phase whose predecessor (cyclic) is not its own: a run holding the
      // drain and the next fill starts at its cool-down or drain. The whole iteration: the fill.
      g.start_s = 0;
      bool whole = true;
      for (int p : with_ops) whole = whole && (g.phases >> p & 1);
      for (size_t i = 0; i < n && !whole; ++i) {
        const int p = with_ops[i], prev = with_ops[(i + n - 1) % n];
        if ((g.phases >> p & 1) && !(g.phases >> prev & 1)) {
          g.start_s = first[s][p];
          break;
        }
      }
      if (whole && n > 0) g.start_s = first[s][with_ops[0]];
    }
  }
}

bool has_ops(const OneFOneB& dag, int s, int p) {
  const auto ph = static_cast<Phase>(p);
  return dag.count(s, Instr::kForward, ph) + dag.count(s, Instr::kBackward, ph) > 0;
}

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
  if (!(opt.min_segment_s >= 0)) return Status::InvalidArgument("--min-segment-s: must be >= 0");
  if (opt.max_nodes < 0) return Status::InvalidArgument("max_nodes: must be >= 0");
  const std::clock_t cpu_start = std::clock();
  const int S = profile.num_stages();
  OneFOneB dag(S, opt.microbatches);
  std::vector<std::vector<Level>> levels;
  std::vector<std::vector<LevelOps>> level_ops(static_cast<size_t>(S));
  for (int s = 0; s < S; ++s) {
    auto l = stage_levels(profile, s, opt);
    if (!l.ok()) return l.status();
    for (const Level& x : *l) level_ops[s].push_back(x.ops);
    levels.push_back(std::move(*l));
  }

  Plan plan;
  plan.stages = S;
  plan.microbatches = opt.microbatches;
  plan.tp = opt.tp;
  plan.pipelines = opt.global_batch / opt.microbatches;
  plan.blocking_w = opt.blocking_w;
  plan.slowdown_max = opt.slowdown_max;
  plan.straggler_factor = opt.straggler_factor;
  plan.min_cap_w = opt.min_cap_w;
  plan.max_cap_w = opt.max_cap_w;
  plan.cap_limit_w = opt.cap_limit_w;
  plan.allow_above_max = opt.allow_above_max;
  plan.min_segment_s = opt.min_segment_s;
  plan.segments = opt.segments;
  for (int s = 0; s < S; ++s) {
    const CapSetting& b = levels[s][0].set;
    plan.baseline_mhz.push_back({b.forward_mhz, b.backward_mhz});
    for (int k = 0; k < 2; ++k) {
      const ClockPoint& top = profile.at(s, static_cast<Instr>(k)).points[0];
      plan.profile_top_power_w = std::max(plan.profile_top_power_w, top.power_w());
      plan.baseline_at_top_clock =
          plan.baseline_at_top_clock && plan.baseline_mhz[s][k] == top.freq_mhz;
    }
  }
  // Per stage and phase: a lower bound on its duration (its ops at the fastest level), and the
  // shortest possible iteration (every op at its fastest level).
  std::vector<std::array<double, kPhases>> phase_min(static_cast<size_t>(S));
  std::vector<double> fastest(static_cast<size_t>(S) * 2 * kPhases, 0.0), scratch;
  for (int s = 0; s < S; ++s) {
    double tmin[2] = {kInf, kInf};
    for (const LevelOps& l : level_ops[s]) {
      for (int k = 0; k < 2; ++k) tmin[k] = std::min(tmin[k], l.t[k]);
    }
    for (int p = 0; p < kPhases; ++p) {
      phase_min[s][p] = 0;
      for (int k = 0; k < 2; ++k) {
        const auto ik = static_cast<Instr>(k);
        phase_min[s][p] += dag.count(s, ik, static_cast<Phase>(p)) * tmin[k];
        fastest[OneFOneB::slot(s, ik, static_cast<Phase>(p))] = tmin[k];
      }
    }
  }
  const double t_min = dag.iteration_time(fastest.data(), scratch);
  const double F = opt.straggler_factor;
  const int n = plan.pipelines;
  const double wt = opt.blocking_w * S;  // energy per second of iteration time, per GPU of a stage

  std::vector<int> const_level;  // the constant plan's level per stage (seeds the schedule)
  PathPool pool;                 // the DAG's paths, shared by every search below
  for (int m = 0; m < 2; ++m) {
    std::vector<std::vector<std::vector<int>>> segs(static_cast<size_t>(S));
    for (int s = 0; s < S; ++s) {
      std::array<bool, kPhases> ops{};
      for (int p = 0; p < kPhases; ++p) ops[p] = has_ops(dag, s, p);
      segs[s] = m == 0
                    ? std::vector<std::vector<int>>{{(1 << kPhases) - 1}}
                    : stage_segmentations(phase_min[s], ops, opt.min_segment_s, opt.segments == 5);
    }
    CapSearch search(dag, level_ops, segs, opt.blocking_w, pool);
    const CapSearch::Choice base = search.baseline();
    const double t0 = search.time_of(base);
    const double e0 = opt.tp * (search.cost_of(base) + wt * t0);
    plan.baseline_pipeline_time_s = t0;
    plan.baseline_pipeline_energy_j = e0;
    plan.baseline_time_s = F * t0;
    plan.baseline_energy_j = F * e0 + (n - 1) * opt.tp * (search.cost_of(base) + wt * F * t0);
    std::vector<CapSearch::Choice> starts;
    if (m == 1) {
      CapSearch::Choice c = base;
      for (int s = 0; s < S; ++s) {
        for (size_t g = 0; g < segs[s].size(); ++g) {
          for (const auto& [id, mask] : search.vars_of(s, static_cast<int>(g))) {
            c.level[id] = const_level[s];
          }
        }
      }
      starts.push_back(c);
    }
    auto settings = [&](const CapSearch::Choice& c) {
      std::vector<std::array<CapSetting, kPhases>> out(static_cast<size_t>(S));
      for (int s = 0; s < S; ++s) {
        const auto vars = search.vars_of(s, c.seg[s]);
        for (int p = 0; p < kPhases; ++p) out[s][p] = levels[s][c.level[vars[0].first]].set;
        for (const auto& [id, mask] : vars) {
          for (int p = 0; p < kPhases; ++p) {
            if (mask >> p & 1) out[s][p] = levels[s][c.level[id]].set;
          }
        }
      }
      return out;
    };

    const double h_i = t0 * (1 + opt.slowdown_max);
    const auto pick = search.minimise(h_i, wt, starts, opt.max_nodes);
    ModePlan& mp = m == 0 ? plan.constant : plan.schedule;
    mp.mode = m == 0 ? "constant" : "schedule";
    mp.stages = settings(pick.best);
    if (m == 0) {
      for (int s = 0; s < S; ++s)
        const_level.push_back(pick.best.level[search.vars_of(s, 0)[0].first]);
    }
    mp.segments.resize(static_cast<size_t>(S));
    for (int s = 0; s < S; ++s) {
      const auto vars = search.vars_of(s, pick.best.seg[s]);
      // A stage switches when two of its segments hold different levels; only then is a
      // segment's length a settling constraint (shortest_segment_s, header).
      bool switches = false;
      for (const auto& v : vars)
        switches |= pick.best.level[v.first] != pick.best.level[vars[0].first];
      for (const auto& [id, mask] : vars) {
        PlanSegment seg;
        const Level& l = levels[s][pick.best.level[id]];
        seg.set = l.set;
        for (int p = 0; p < kPhases; ++p) {
          if (!(mask >> p & 1) || !has_ops(dag, s, p)) continue;
          seg.phases |= 1 << p;
          for (int k = 0; k < 2; ++k) {
            seg.busy_s += dag.count(s, static_cast<Instr>(k), static_cast<Phase>(p)) * l.ops.t[k];
          }
        }
        mp.segments[s].push_back(seg);
        if (switches && (mp.shortest_segment_s == 0 || seg.busy_s < mp.shortest_segment_s)) {
          mp.shortest_segment_s = seg.busy_s;
        }
      }
    }
    segment_starts(dag, search, level_ops, pick.best, mp.segments);
    mp.pipeline_time_s = pick.time_s;
    mp.pipeline_energy_j = opt.tp * pick.objective;
    mp.optimal = pick.optimal;
    mp.search_nodes = pick.nodes;
    double bound_j = 0;
    if (F > 1) {
      const double h_s = F * pick.time_s;
      const auto other = search.minimise(h_s, 0, {pick.best}, opt.max_nodes);
      mp.others = settings(other.best);
      mp.others_time_s = other.time_s;
      mp.time_s = h_s;
      mp.energy_j = F * mp.pipeline_energy_j + (n - 1) * opt.tp * (other.cost + wt * h_s);
      mp.optimal = mp.optimal && other.optimal;
      mp.search_nodes += other.nodes;
      // The others' cost at any straggler time F·T ≤ F·h_i is at least the least cost within
      // F·h_i, and they block until F·T ≥ F·t_min.
      double lb_o = other.bound;
      if (h_s < F * h_i * (1 - 1e-12)) lb_o = search.minimise(F * h_i, 0, {other.best}, 1).bound;
      bound_j = F * opt.tp * pick.bound + (n - 1) * opt.tp * (lb_o + wt * F * t_min);
    } else {
      mp.time_s = pick.time_s;
      mp.energy_j = n * mp.pipeline_energy_j;
      bound_j = n * opt.tp * pick.bound;
    }
    mp.energy_saved = 1 - mp.energy_j / plan.baseline_energy_j;
    mp.time_increase = mp.time_s / plan.baseline_time_s - 1;
    mp.bound_energy_saved = std::max(mp.energy_saved, 1 - bound_j / plan.baseline_energy_j);
    // The frontier: the same search at a range of time limits, and the plan's own point.
    std::vector<FrontierPoint> fr{{pick.time_s, mp.pipeline_energy_j}};
    const double span = std::max({0.05, 2 * opt.slowdown_max, F - 1});
    CapSearch::Choice prev = pick.best;
    for (int j = 0; j < opt.frontier_points; ++j) {
      const double h = t0 * (1 + span * j / std::max(1, opt.frontier_points - 1));
      const auto pt = search.minimise(h, wt, {prev, pick.best}, std::min(opt.max_nodes, 2));
      fr.push_back({pt.time_s, opt.tp * pt.objective});
      prev = pt.best;
    }
    std::sort(fr.begin(), fr.end(), [](const FrontierPoint& a, const FrontierPoint& b) {
      return a.time_s < b.time_s || (a.time_s == b.time_s && a.energy_j < b.energy_j);
    });
    double e_min = kInf;
    for (const auto& p : fr) {
      if (p.energy_j < e_min * (1 - 1e-12)) {
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

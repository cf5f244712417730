#pragma once
// The planner's search (pipeline/planner.hpp): the least-energy per-stage cap segments within
// an iteration time, with a proven lower bound beside it.
//
// Problem. Stage s has one or more segmentations (pipeline/segments.hpp: its 1F1B phases cut
// into segments, each holding one cap); a plan picks one segmentation per stage and one of the
// stage's cap levels for each of its segments. Its cost is Σ_ops (E(op) − P_block · t(op)): a
// pipeline's energy over a horizon H is tp · (cost + P_block · S · H). The objective is
// cost + w · T, T the plan's 1F1B critical path: w = P_block · S is the energy over the plan's
// own iteration, w = 0 the energy over a fixed horizon. A plan is feasible when T ≤ h (to 1e-9
// relative).
//
// Method: branch and bound, exact when it finishes within its node budget.
// - Bound: the linear relaxation (each segment a convex mixture of its levels, each stage of its
//   segmentations), the time written as one row per path of the 1F1B DAG: Σ_ops on the path of
//   the op's mixed duration ≤ τ ≤ h, τ priced at w. Rows are added while the relaxation's own
//   critical path is longer than τ; with fewer rows than paths it is still a relaxation, so its
//   optimum never exceeds any feasible plan's objective. Paths are kept between calls (they do
//   not depend on h).
// - Levels a segment never needs are dropped first: a level is dominated when another is no
//   slower on every instruction the segment runs and costs no more.
// - Incumbent: the given starts, and the relaxation rounded to the fastest level of each mixture,
//   repaired and polished by coordinate descent (every level of every segment, every
//   segmentation of a stage), at the root and the first levels of the tree.
// - A node whose bound is within 1e-7 (relative to the energy) of the incumbent is cut. When no
//   node is left the incumbent is optimal (to 1e-7); otherwise `bound` is the least bound of the
//   nodes left, a proven lower bound on every feasible plan's objective.

#include <array>
#include <set>
#include <vector>

#include "pipeline/one_f_one_b.hpp"

namespace fw::pipeline {

// One cap level of a stage: the time and energy of a forward (0) and a backward (1) op.
struct LevelOps {
  double t[2] = {0, 0}, e[2] = {0, 0};
};

// Paths of a 1F1B DAG found so far, each as its ops per slot (OneFOneB::slot): they depend on
// the DAG only, so searches on one DAG (modes, time limits) share them. Owned by the caller.
struct PathPool {
  std::vector<std::vector<int>> paths;
  std::set<std::vector<int>> seen;
};

class CapSearch {
 public:
  // levels[s]: stage s's levels, level 0 the fastest setting allowed (uncapped). segmentations[s]:
  // its segmentations, each a list of phase masks. REQUIRES: every stage has one or more levels
  // and one or more segmentations covering its phases with ops.
  // `pool` outlives the search.
  CapSearch(const OneFOneB& dag, std::vector<std::vector<LevelOps>> levels,
            const std::vector<std::vector<std::vector<int>>>& segmentations, double blocking_w,
            PathPool& pool);

  // A plan: per stage its segmentation, per segment variable (all segmentations of all stages,
  // in order) a stage level; variables of segmentations not chosen are ignored.
  struct Choice {
    std::vector<int> seg;
    std::vector<int> level;
  };
  struct Outcome {
    Choice best;
    double cost = 0, time_s = 0;
    double objective = 0;  // cost + w · time_s
    double bound = 0;      // ≤ every feasible plan's objective
    bool optimal = false;  // the tree was searched to the end
    int nodes = 0;
  };

  // REQUIRES: h ≥ the time of baseline() (so a feasible plan exists), time_weight ≥ 0.
  Outcome minimise(double h, double time_weight, const std::vector<Choice>& starts, int max_nodes);

  Choice baseline() const;  // every segment at level 0, each stage's first segmentation
  double cost_of(const Choice& c) const;
  double time_of(const Choice& c);
  // Variables of stage s's segmentation g: (index, phase mask).
  std::vector<std::pair<int, int>> vars_of(int s, int g) const;
  int num_vars() const { return static_cast<int>(vars_.size()); }
  size_t num_paths() const { return pool_.paths.size(); }

 private:
  struct Var {
    int stage = 0, seg = 0, mask = 0;
    int ops[2] = {0, 0};              // forward, backward ops in the segment
    std::vector<int> lv;              // kept levels, fastest (highest cap) first
    std::vector<double> cost;         // per kept level
    std::vector<int> entry_of_level;  // stage level -> kept entry (itself or one dominating it)
  };
  struct Sol {
    std::vector<int> seg, ent;
    double cost = 0, t = 0;
    double obj = 0;  // cost + w_ · t
  };
  struct Node {
    std::vector<std::pair<int, int>> range;  // per var: kept entries allowed
    std::vector<unsigned> segs;              // per stage: segmentations allowed (bits)
    double parent_bound = 0;
    int depth = 0;
  };
  struct Relaxed {
    bool feasible = false;
    bool failed = false;  // the relaxation could not be solved: the node stays open
    double bound = 0;
    std::vector<std::vector<double>> lambda;  // per var, per kept entry (0 where not allowed)
    std::vector<std::vector<double>> y;       // per stage, per segmentation
  };

  std::vector<int> lp_entries(const Var& v, int lo, int hi) const;
  void durations(const Sol& s, std::vector<double>& d) const;
  void evaluate(Sol& s);
  bool feasible(const Sol& s, double h) const { return s.t <= h * (1 + 1e-9); }
  // Longest paths under slot durations d: adds those longer than `limit` that are new; returns
  // their number.
  int add_paths(const std::vector<double>& d, double limit);
  Relaxed relax(const Node& n, double h);
  Sol round(const Relaxed& r, const Node& n, double h);
  // Diving: fix the most decided mixture to its heaviest level (a stage's segmentation first),
  // solve the relaxation again, until it is integral; polished. Feasible or nullopt.
  bool dive(Relaxed r, Node n, double h, Sol& out);
  void repair(Sol& s, double h);
  void polish(Sol& s, double h, const Node* n);
  // Pairs of segments each moved by up to two levels; the first pair that lowers the objective
  // is taken, then polished again, a few rounds.
  void two_opt(Sol& s, double h);
  // The segments running one phase on every stage of one profile (stages with the same level
  // table) moved together to one level, then polished: steady states that must keep one pace
  // move together, which no single or pairwise step does.
  void align(Sol& s, double h);
  Sol from_choice(const Choice& c) const;
  Choice to_choice(const Sol& s) const;

  const OneFOneB& dag_;
  std::vector<std::vector<LevelOps>> levels_;
  double blocking_w_;
  std::vector<Var> vars_;
  std::vector<std::vector<std::vector<int>>> stage_vars_;  // [stage][segmentation] -> vars
  PathPool& pool_;
  std::vector<double> scratch_, d_;
  double scale_ = 1;  // objective units per LP unit
  double w_ = 0;      // time weight of the current minimise()
};

}  // namespace fw::pipeline

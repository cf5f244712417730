#pragma once
// A small dense linear program and its solver (two-phase tableau simplex), for the pipeline
// planner's bounds (pipeline/cap_search.hpp): minimise cost·x subject to rows a·x ≤ rhs or
// a·x = rhs, x ≥ 0, every rhs ≥ 0.
//
// Contract: sizes are small (hundreds of rows and columns; the tableau is dense). Dantzig's rule
// with Harris's ratio test, switching to Bland's after a run of degenerate pivots. Against
// degeneracy the right-hand side of every ≤ row is raised by 1e-9..2e-9 × (1 + |rhs|): the
// problem solved is a relaxation of the one given, so its optimum is a lower bound on the given
// one's, lower by at most that much times the row's dual. Tolerances are absolute (1e-9): the
// caller scales rows and costs to order one. No state between calls.

#include <utility>
#include <vector>

namespace fw::pipeline {

struct LinearProgram {
  struct Row {
    std::vector<std::pair<int, double>> terms;  // (column, coefficient)
    bool equality = false;                      // else ≤
    double rhs = 0;                             // REQUIRES: >= 0
  };
  int num_vars = 0;
  std::vector<double> cost;  // size num_vars
  std::vector<Row> rows;
};

struct LpSolution {
  enum class Status { kOptimal, kInfeasible, kUnbounded, kIterationLimit };
  Status status = Status::kInfeasible;
  double objective = 0;
  std::vector<double> x;  // size num_vars when kOptimal
};

LpSolution solve_lp(const LinearProgram& lp);

}  // namespace fw::pipeline

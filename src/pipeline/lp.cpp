#include "pipeline/lp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fw::pipeline {
namespace {

constexpr double kPivotEps = 1e-9;
constexpr double kCostEps = 1e-9;
constexpr double kFeasEps = 1e-9;

class Tableau {
 public:
  Tableau(int rows, int cols) : m_(rows), w_(cols + 1), t_(static_cast<size_t>(rows) * w_, 0.0) {}
  double* row(int i) { return &t_[static_cast<size_t>(i) * w_]; }
  double& rhs(int i) { return row(i)[w_ - 1]; }
  int rows() const { return m_; }
  int width() const { return w_; }

  void pivot(int r, int q, std::vector<double>& obj) {
    double* pr = row(r);
    const double inv = 1 / pr[q];
    nz_.clear();
    for (int j = 0; j < w_; ++j) {
      if (pr[j] == 0) continue;
      pr[j] *= inv;
      nz_.push_back(j);
    }
    pr[q] = 1;
    for (int i = 0; i < m_; ++i) {
      if (i == r) continue;
      double* pi = row(i);
      const double f = pi[q];
      if (f == 0) continue;
      for (int j : nz_) pi[j] -= f * pr[j];
      pi[q] = 0;
    }
    const double f = obj[q];
    if (f != 0) {
      for (int j : nz_) obj[j] -= f * pr[j];
      obj[q] = 0;
    }
  }

 private:
  int m_, w_;
  std::vector<double> t_;
  std::vector<int> nz_;  // the pivot row's nonzero columns
};

// Minimises over the columns with allowed[j]; obj holds the reduced costs (last: −value).
LpSolution::Status iterate(Tableau& t, std::vector<int>& basis, std::vector<double>& obj,
                           const std::vector<char>& allowed, int max_iter) {
  const int m = t.rows(), n = t.width() - 1;
  bool bland = false;
  int degenerate = 0;
  for (int it = 0; it < max_iter; ++it) {
    int q = -1;
    double best = -kCostEps;
    for (int j = 0; j < n; ++j) {
      if (!allowed[j] || obj[j] >= -kCostEps) continue;
      if (bland) {
        q = j;
        break;
      }
      if (obj[j] < best) {
        best = obj[j];
        q = j;
      }
    }
    if (q < 0) return LpSolution::Status::kOptimal;
    // Harris's two-pass ratio test: the largest step any row allows within the feasibility
    // tolerance, then among the rows that bind by then the largest pivot (Bland: the lowest
    // basic column)
    double theta = std::numeric_limits<double>::infinity();
    for (int i = 0; i < m; ++i) {
      const double a = t.row(i)[q];
      if (a > kPivotEps) theta = std::min(theta, (std::max(0.0, t.rhs(i)) + kFeasEps) / a);
    }
    int r = -1;
    double ratio = 0;
    for (int i = 0; i < m; ++i) {
      const double a = t.row(i)[q];
      if (a <= kPivotEps) continue;
      const double x = std::max(0.0, t.rhs(i)) / a;
      if (x > theta) continue;
      if (r < 0 || (bland ? basis[i] < basis[r] : a > t.row(r)[q])) {
        r = i;
        ratio = x;
      }
    }
    if (r < 0) return LpSolution::Status::kUnbounded;
    degenerate = ratio <= 1e-12 ? degenerate + 1 : 0;
    if (degenerate > 50) bland = true;
    t.pivot(r, q, obj);
    basis[r] = q;
  }
  return LpSolution::Status::kIterationLimit;
}

}  // namespace

LpSolution solve_lp(const LinearProgram& lp) {
  LpSolution out;
  const int n = lp.num_vars, m = static_cast<int>(lp.rows.size());
  int slacks = 0, arts = 0;
  for (const auto& r : lp.rows) (r.equality ? arts : slacks) += 1;
  const int cols = n + slacks + arts;
  Tableau t(m, cols);
  std::vector<int> basis(static_cast<size_t>(m));
  std::vector<char> is_art(static_cast<size_t>(cols), 0);
  int next_slack = n, next_art = n + slacks;
  for (int i = 0; i < m; ++i) {
    const auto& r = lp.rows[i];
    double* p = t.row(i);
    for (const auto& [j, a] : r.terms) p[j] += a;
    // ≤ rows start raised by 1e-9..2e-9 (relative): degenerate vertices split, and the problem
    // is only relaxed (its optimum can only fall)
    t.rhs(i) =
        r.equality ? r.rhs : r.rhs + (1 + std::abs(r.rhs)) * 1e-9 * (1 + (i * 37 % 101) / 101.0);
    const int b = r.equality ? next_art++ : next_slack++;
    p[b] = 1;
    basis[i] = b;
    if (r.equality) is_art[b] = 1;
  }
  const int max_iter = 50 * (m + cols) + 1000;
  std::vector<double> obj(static_cast<size_t>(cols) + 1, 0.0);
  std::vector<char> allowed(static_cast<size_t>(cols), 1);
  if (arts > 0) {  // phase I: minimise the artificials
    for (int i = 0; i < m; ++i) {
      if (!is_art[basis[i]]) continue;
      const double* p = t.row(i);
      for (int j = 0; j <= cols; ++j) obj[j] -= p[j];
    }
    for (int j = 0; j < cols; ++j) {
      if (is_art[j]) obj[j] += 1;
    }
    const auto st = iterate(t, basis, obj, allowed, max_iter);
    if (st == LpSolution::Status::kIterationLimit) {
      out.status = st;
      return out;
    }
    if (-obj[cols] > 1e-7) {
      out.status = LpSolution::Status::kInfeasible;
      return out;
    }
    for (int i = 0; i < m; ++i) {  // drive zero artificials out of the basis
      if (!is_art[basis[i]]) continue;
      const double* p = t.row(i);
      for (int j = 0; j < cols; ++j) {
        if (!is_art[j] && std::abs(p[j]) > kPivotEps) {
          t.pivot(i, j, obj);
          basis[i] = j;
          break;
        }
      }
    }
    for (int j = 0; j < cols; ++j) allowed[j] = !is_art[j];
  }
  // phase II
  std::fill(obj.begin(), obj.end(), 0.0);
  for (int j = 0; j < n; ++j) obj[j] = lp.cost[j];
  for (int i = 0; i < m; ++i) {
    const int b = basis[i];
    const double cb = b < n ? lp.cost[b] : 0.0;
    if (cb == 0) continue;
    const double* p = t.row(i);
    for (int j = 0; j <= cols; ++j) obj[j] -= cb * p[j];
  }
  const auto st = iterate(t, basis, obj, allowed, max_iter);
  out.status = st;
  if (st != LpSolution::Status::kOptimal) return out;
  out.x.assign(static_cast<size_t>(n), 0.0);
  out.objective = 0;
  for (int i = 0; i < m; ++i) {
    if (basis[i] < n) out.x[basis[i]] = std::max(0.0, t.rhs(i));
  }
  for (int j = 0; j < n; ++j) out.objective += lp.cost[j] * out.x[j];
  return out;
}

}  // namespace fw::pipeline

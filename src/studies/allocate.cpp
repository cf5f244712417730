#include "studies/allocate.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "core/config.hpp"
#include "core/format.hpp"
#include "sim/fit.hpp"
#include "studies/sweep.hpp"

namespace fw::studies {
namespace {

using allocation::Job;

Result<Job> parse_curve(const ConfigNode& c, Job j) {
  if (!c.is_sequence()) return c.error("expected a list of [power_w, throughput] pairs");
  for (size_t k = 0; k < c.size(); ++k) {
    ConfigNode pt = c.at(k);
    if (!pt.is_sequence() || pt.size() != 2) return pt.error("expected [power_w, throughput]");
    auto p = pt.at(0).as_double(1e-9, 1e12);
    if (!p.ok()) return p.status();
    auto t = pt.at(1).as_double(0, 1e18);
    if (!t.ok()) return t.status();
    j.curve.push_back({*p, *t});
  }
  return j;
}

Result<Job> parse_sweep_ref(const ConfigNode& n, Job j, const std::string& base_dir) {
  auto path = n.get_string("sweep_csv", "");
  if (!path.ok()) return path.status();
  auto job = n.get_string("sweep_job", "");
  if (!job.ok()) return job.status();
  auto gpus = n.get_int("gpus", 1, 1, 1000000);
  if (!gpus.ok()) return gpus.status();
  std::string p = *path;
  if (!p.empty() && p[0] != '/' && !std::filesystem::exists(p)) p = base_dir + "/" + p;
  auto sweeps = sim::read_sweep_csv(p, *job);
  if (!sweeps.ok()) return n["sweep_csv"].error(sweeps.status().message());
  for (const auto& m : *sweeps) {
    if (m.job != *job) continue;
    for (const auto& pt : m.points) {
      j.curve.push_back({pt.power_w * static_cast<double>(*gpus), pt.throughput});
    }
    return j;
  }
  return n["sweep_job"].error("no job '" + *job + "' in " + p);
}

Result<Job> parse_allocation_job(const ConfigNode& n, size_t index, const std::string& base_dir) {
  FW_RETURN_IF_ERROR(
      n.reject_unknown({"name", "sla_pct", "curve", "pmax_w", "tmax", "pfi", "min_power_frac",
                        "draw_w", "sweep_csv", "sweep_job", "gpus", "throughput_scale"}));
  Job j;
  auto name = n.get_string("name", "job" + std::to_string(index));
  if (!name.ok()) return name.status();
  j.name = *name;
  auto sla = n.get_double("sla_pct", 50, 0, 100);
  if (!sla.ok()) return sla.status();
  j.max_slowdown = *sla / 100;
  auto draw = n.get_double("draw_w", 0, 0, 1e12);
  if (!draw.ok()) return draw.status();
  j.draw_w = *draw;
  auto pfi = n.get_double("pfi", 0, 0, 100);
  if (!pfi.ok()) return pfi.status();
  Result<Job> r = j;
  if (n.has("curve")) {
    r = parse_curve(n["curve"], j);
  } else if (n.has("sweep_csv")) {
    r = parse_sweep_ref(n, j, base_dir);
  } else {
    auto pmax = n.get_double("pmax_w", 0, 1e-9, 1e12);
    auto tmax = n.get_double("tmax", 0, 1e-12, 1e18);
    auto frac = n.get_double("min_power_frac", 0.3, 0.01, 0.99);
    if (!pmax.ok()) return pmax.status();
    if (!tmax.ok()) return tmax.status();
    if (!frac.ok()) return frac.status();
    if (!n.has("pmax_w") || !n.has("tmax") || !n.has("pfi")) {
      return n.error("a job needs `curve`, `sweep_csv`, or `pmax_w`, `tmax` and `pfi`");
    }
    if (*pfi < 1e-3) return n["pfi"].error("must be > 0");
    r = allocation::job_from_pfi(j.name, *pmax, *tmax, *pfi, *frac, j.max_slowdown);
    r->draw_w = j.draw_w;
  }
  if (!r.ok()) return r.status();
  auto scale = n.get_double("throughput_scale", 1, 1e-12, 1e12);
  if (!scale.ok()) return scale.status();
  for (auto& p : r->curve) p.throughput *= *scale;
  r->pfi = *pfi;
  Status st = allocation::validate(*r);
  if (!st.ok()) return n.error(st.message());
  return r;
}

Result<AllocateInput> parse_root(const ConfigNode& root, const std::string& base_dir) {
  if (!root.is_map()) return root.error("expected a map with `jobs` and `target_w` or `cut`");
  FW_RETURN_IF_ERROR(root.reject_unknown({"jobs", "target_w", "cut"}));
  ConfigNode jobs = root["jobs"];
  if (!jobs.is_sequence() || jobs.size() == 0) return root.error("`jobs`: a non-empty list");
  AllocateInput in;
  double pmax_sum = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    auto j = parse_allocation_job(jobs.at(i), i, base_dir);
    if (!j.ok()) return j.status();
    pmax_sum += j->curve.back().power_w;
    in.jobs.push_back(std::move(*j));
  }
  if (root.has("target_w") == root.has("cut")) return root.error("give one of target_w, cut");
  if (root.has("target_w")) {
    auto t = root.get_double("target_w", 0, 0, 1e15);
    if (!t.ok()) return t.status();
    in.target_w = *t;
  } else {
    auto c = root.get_double("cut", 0, 0, 1);
    if (!c.ok()) return c.status();
    in.target_w = pmax_sum * (1 - *c);
  }
  return in;
}

}  // namespace

Result<AllocateInput> load_allocate_input(const std::string& path) {
  auto root = ConfigNode::load_file(path);
  if (!root.ok()) return root.status();
  std::string dir = std::filesystem::path(path).parent_path().string();
  return parse_root(*root, dir.empty() ? "." : dir);
}

AllocateReport run_allocate(const AllocateInput& in,
                            const std::vector<allocation::Method>& methods) {
  AllocateReport r{in, {}};
  for (auto m : methods) r.results.push_back(allocation::allocate(in.jobs, in.target_w, m));
  return r;
}

namespace {
const allocation::Allocation* find(const AllocateReport& r, allocation::Method m) {
  for (const auto& a : r.results) {
    if (a.method == m) return &a;
  }
  return nullptr;
}
double gap_of(const AllocateReport& r, const allocation::Allocation& a) {
  const auto* e = find(r, allocation::Method::kEqual);
  const auto* o = find(r, allocation::Method::kOptimal);
  return e && o ? allocation::gap_closed(a, *e, *o) : std::nan("");
}
}  // namespace

nlohmann::json allocate_json(const AllocateReport& r) {
  nlohmann::json methods = nlohmann::json::array();
  double pmax_sum = 0;
  for (const auto& j : r.input.jobs) pmax_sum += j.curve.back().power_w;
  for (const auto& a : r.results) {
    nlohmann::json jobs = nlohmann::json::array();
    for (size_t i = 0; i < a.power_w.size(); ++i) {
      const auto& j = r.input.jobs[i];
      jobs.push_back({{"name", j.name},
                      {"power_w", a.power_w[i]},
                      {"throughput", a.throughput[i]},
                      {"slowdown", 1 - a.throughput[i] / j.curve.back().throughput}});
    }
    const double gap = gap_of(r, a);
    nlohmann::json m = {{"method", allocation::method_name(a.method)},
                        {"feasible", a.feasible},
                        {"total_power_w", a.total_power_w},
                        {"total_throughput", a.total_throughput},
                        {"gap_closed", std::isnan(gap) ? nlohmann::json() : nlohmann::json(gap)},
                        {"jobs", jobs}};
    if (a.method == allocation::Method::kOptimal) {
      m["exact"] = a.exact;
      m["upper_bound"] = a.upper_bound;
    }
    methods.push_back(m);
  }
  nlohmann::json pfis = nlohmann::json::array();
  for (const auto& j : r.input.jobs) {
    pfis.push_back({{"name", j.name},
                    {"pmax_w", j.curve.back().power_w},
                    {"tmax", j.curve.back().throughput},
                    {"pfi", allocation::job_pfi(j)},
                    {"max_slowdown", j.max_slowdown},
                    {"floor_w", allocation::floor_w(j)}});
  }
  return {{"target_w", r.input.target_w},
          {"pmax_sum_w", pmax_sum},
          {"jobs", pfis},
          {"methods", methods}};
}

std::string allocate_table(const AllocateReport& r, bool per_job, const TextStyle& style) {
  std::string out;
  char b[200];
  double pmax_sum = 0;
  for (const auto& j : r.input.jobs) pmax_sum += j.curve.back().power_w;
  std::snprintf(b, sizeof b, "target %.0f W of %.0f W uncapped (cut %.1f %%), %zu jobs\n",
                r.input.target_w, pmax_sum, 100 * (1 - r.input.target_w / pmax_sum),
                r.input.jobs.size());
  out += b;
  out += "method        feasible  power_w      throughput   gap closed\n";
  for (const auto& a : r.results) {
    const double gap = gap_of(r, a);
    std::snprintf(b, sizeof b, "%-12s  %-8s  %-11.1f  %-11s  ",
                  allocation::method_name(a.method).c_str(), a.feasible ? "yes" : "NO",
                  a.total_power_w, format_si(a.total_throughput, 4).c_str());
    out += b;
    if (std::isnan(gap)) {
      out += "-";
    } else {
      std::snprintf(b, sizeof b, "%.1f %%", 100 * gap);
      out += b;
    }
    if (a.method == allocation::Method::kOptimal && !a.exact) {
      out += "  (grid; bound " + format_si(a.upper_bound, 4) + ")";
    }
    out += "\n";
  }
  if (!per_job) return out;
  // One column per method; the baselines a reader compares least (proportional, pfi_scaled)
  // and floor_w are left out first to fit the width (named under the table).
  TextTable t;
  t.label_header = "job";
  t.columns.push_back({"PFI", 1});
  t.columns.push_back({"floor_w", 2});
  for (const auto& a : r.results) {
    const allocation::Method m = a.method;
    const int rank = m == allocation::Method::kProportional ? 3
                     : m == allocation::Method::kPfiScaled  ? 2
                                                            : 1;
    t.columns.push_back({allocation::method_name(m), rank});
  }
  for (size_t i = 0; i < r.input.jobs.size(); ++i) {
    const auto& j = r.input.jobs[i];
    std::vector<std::string> row = {j.name, format_fixed(allocation::job_pfi(j), 2),
                                    format_fixed(allocation::floor_w(j), 0)};
    for (const auto& a : r.results) {
      row.push_back(format_fixed(a.power_w[i], 0) + "/" +
                    format_fixed(100 * (1 - a.throughput[i] / j.curve.back().throughput), 1));
    }
    t.rows.push_back(std::move(row));
  }
  out += "\neach job's power_w / slowdown % by method\n";
  std::vector<std::string> left_out;
  out += render_table(t, style, &left_out);
  if (!left_out.empty()) {
    out += "not shown (--wide shows them):";
    for (size_t i = 0; i < left_out.size(); ++i) out += (i ? ", " : " ") + left_out[i];
    out += "\n";
  }
  return out;
}

}  // namespace fw::studies

#include "studies/sweep.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "analysis/pfi.hpp"
#include "core/format.hpp"
#include "report/sweep_plot.hpp"
#include "sim/fit.hpp"
#include "sim/scenario.hpp"
#include "sim/sweep.hpp"

namespace fw::studies {
namespace {

Result<std::vector<SweepResult>> from_scenario(const SweepRequest& req) {
  auto sc = sim::load_scenario(req.scenario_path, req.overrides);
  if (!sc.ok()) return sc.status();
  if (req.job < 0 || req.job >= static_cast<int>(sc->jobs.size())) {
    return Status::InvalidArgument(req.scenario_path + ": --job " + std::to_string(req.job) +
                                   ": the scenario has " + std::to_string(sc->jobs.size()) +
                                   " job(s)");
  }
  std::vector<double> caps = req.caps_w;
  if (caps.empty()) {
    const auto* gpu = sc->gpus[sc->jobs[req.job].gpus.front()].preset;
    for (int i = 0; i < 6; ++i) {
      caps.push_back(gpu->min_cap_w + (gpu->max_cap_w - gpu->min_cap_w) * i / 5.0);
    }
  }
  sim::SweepOptions opt{req.warmup_s, req.measure_s, req.seed};
  // One cap at a time (each point is its own simulation from the same seed, so the points are
  // those of one call), for the progress line.
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < caps.size(); ++i) {
    auto pts = sim::sweep_caps(*sc, req.job, {caps[i]}, opt);
    if (!pts.ok()) return pts.status();
    for (const auto& p : *pts) rows.push_back({p.cap_w, p.power_w, p.throughput});
    if (req.progress) req.progress(i + 1, caps.size());
  }
  auto r = sweep_result(sc->jobs[req.job].name, rows);
  if (!r.ok()) return r.status();
  r->source = req.scenario_path;
  r->simulated = true;
  r->throughput_unit = "tokens/s";
  return std::vector<SweepResult>{*r};
}

Result<std::vector<SweepResult>> from_csv(const SweepRequest& req) {
  auto sweeps = sim::read_sweep_csv(req.csv_path, req.csv_job);
  if (!sweeps.ok()) return sweeps.status();
  std::vector<SweepResult> out;
  for (const auto& m : *sweeps) {
    if (!req.csv_job.empty() && m.job != req.csv_job) continue;
    std::vector<SweepRow> rows;
    for (const auto& p : m.points) rows.push_back({p.cap_w, p.power_w, p.throughput});
    auto r = sweep_result(m.job, rows);
    if (!r.ok()) return Status::InvalidArgument(req.csv_path + ": " + r.status().message());
    r->source = req.csv_path;
    r->throughput_unit = "as measured";
    out.push_back(*r);
  }
  if (out.empty()) {
    return Status::InvalidArgument(req.csv_path + ": no job '" + req.csv_job + "'");
  }
  return out;
}

}  // namespace

Result<SweepResult> sweep_result(const std::string& job, const std::vector<SweepRow>& points) {
  std::vector<PfiPoint> pts;
  for (const auto& p : points) pts.push_back({p.cap_w, p.throughput, p.power_w});
  auto pfi = compute_pfi(pts, kPfiMinRelDrop);
  if (!pfi.ok()) return Status::InvalidArgument("job '" + job + "': " + pfi.status().message());
  SweepResult r;
  r.job = job;
  r.pfi = *pfi;
  r.rows = points;
  std::sort(r.rows.begin(), r.rows.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.cap_w < b.cap_w; });
  const SweepRow top = r.rows.back();
  for (auto& row : r.rows) {
    row.p_rel = row.power_w / top.power_w;
    row.t_rel = row.throughput / top.throughput;
    const double drop = 1 - row.t_rel;
    row.term = std::fabs(drop) <= kPfiMinRelDrop ? std::numeric_limits<double>::quiet_NaN()
                                                 : (1 - row.p_rel) / drop;
  }
  return r;
}

allocation::Job to_alloc_job(const SweepResult& r, double max_slowdown) {
  allocation::Job j;
  j.name = r.job;
  j.max_slowdown = max_slowdown;
  j.pfi = r.pfi;
  std::vector<SweepRow> rows = r.rows;
  std::sort(rows.begin(), rows.end(),
            [](const SweepRow& a, const SweepRow& b) { return a.power_w < b.power_w; });
  for (const auto& row : rows) {
    if (!j.curve.empty() && row.power_w <= j.curve.back().power_w) continue;
    j.curve.push_back({row.power_w, row.throughput});
  }
  return j;
}

nlohmann::json sweep_json(const std::vector<SweepResult>& results) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : r.rows) {
      rows.push_back(
          {{"cap_w", row.cap_w},
           {"power_w", row.power_w},
           {"throughput", row.throughput},
           {"p_rel", row.p_rel},
           {"t_rel", row.t_rel},
           {"pfi_term", std::isnan(row.term) ? nlohmann::json() : nlohmann::json(row.term)}});
    }
    jobs.push_back({{"job", r.job},
                    {"source", r.source},
                    {"simulated", r.simulated},
                    {"throughput_unit", r.throughput_unit},
                    {"pfi", r.pfi},
                    {"pfi_min_rel_drop", kPfiMinRelDrop},
                    {"rows", rows}});
  }
  return {{"pfi_formula", "mean over caps with T != Tmax of (1 - P/Pmax)/(1 - T/Tmax)"},
          {"jobs", jobs}};
}

std::string sweep_table(const std::vector<SweepResult>& results) {
  std::string out;
  char buf[160];
  for (const auto& r : results) {
    std::snprintf(buf, sizeof buf, "%s  (%s%s)  PFI %.3f\n", r.job.c_str(), r.source.c_str(),
                  r.simulated ? ", simulated" : "", r.pfi);
    out += buf;
    out += "   cap_w    power_w   throughput   P/Pmax  T/Tmax   term\n";
    for (const auto& row : r.rows) {
      std::snprintf(buf, sizeof buf, "  %6.0f  %9.1f  %11s   %6.3f  %6.3f  ", row.cap_w,
                    row.power_w, format_si(row.throughput, 4).c_str(), row.p_rel, row.t_rel);
      out += buf;
      if (std::isnan(row.term)) {
        out += "    -\n";
      } else {
        std::snprintf(buf, sizeof buf, "%5.3f\n", row.term);
        out += buf;
      }
    }
  }
  return out;
}

std::string sweep_svg(const std::vector<SweepResult>& results) {
  report::XyPlot plot;
  plot.title = "Power-cap sweep: T/Tmax against P/Pmax (diagonal: PFI = 1)";
  plot.x_label = "P / Pmax";
  plot.y_label = "T / Tmax";
  plot.x0 = plot.y0 = 0;
  plot.x1 = plot.y1 = 1.05;
  plot.series.push_back({"PFI = 1", {0, 1}, {0, 1}, true, {}, {}});
  for (const auto& r : results) {
    report::XySeries s;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s (PFI %.2f)", r.job.c_str(), r.pfi);
    s.label = buf;
    for (const auto& row : r.rows) {
      s.x.push_back(row.p_rel);
      s.y.push_back(row.t_rel);
    }
    plot.series.push_back(s);
  }
  return report::render_xy_svg(plot);
}

}  // namespace fw::studies

namespace fw::studies {

Result<std::vector<SweepResult>> run_sweep(const SweepRequest& req) {
  if (!req.csv_path.empty()) return from_csv(req);
  return from_scenario(req);
}

}  // namespace fw::studies

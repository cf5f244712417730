#include "experiment/eval_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fw::experiment {
namespace {

using Cell = std::function<std::string(const ControllerSummary&, const CellContext&)>;

Cell stat_cell(Stat ControllerSummary::*field, double scale, int decimals) {
  return [=](const ControllerSummary& r, const CellContext&) {
    return fmt_stat(r.*field, scale, decimals);
  };
}

// A ratio from the row's JSON: object[key], "-" when the object is null.
Cell ratio_cell(const char* object, const char* key) {
  return [=](const ControllerSummary&, const CellContext& c) {
    const nlohmann::json& o = c.row_json[object];
    return o.is_null() ? std::string("-") : fmt_ratio(o[key]);
  };
}

std::string fixed0(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}

std::string padded(const std::string& text, int width) {
  char b[1024];
  std::snprintf(b, sizeof b, "  %*s", width, text.c_str());
  return b;
}

// The first line: scenario, seeds, duration and the first budget.
std::string title_line(const EvalRequest& req) {
  const sim::Scenario& scenario = req.scenario;
  const Budget& b0 = scenario.budget.entries.front().budget;
  const size_t ns = req.seeds.size();
  char line[1024];
  std::snprintf(
      line, sizeof line,
      "flexwatt eval — SIMULATED: %s, %zu seed%s (%llu..%llu), %.0f s each; budget %.1f W per %s "
      "over %.0f s windows\n",
      scenario.name.c_str(), ns, ns == 1 ? "" : "s",
      static_cast<unsigned long long>(req.seeds.front()),
      static_cast<unsigned long long>(req.seeds.back()), scenario.duration_s, b0.watts,
      std::string(scope_name(b0.scope)).c_str(), b0.window_s);
  return line;
}

std::string main_table(const EvalRequest& req, const EvalReport& report, int label_w) {
  const nlohmann::json out = report.to_json(req);
  const std::vector<TableColumn> cols = eval_table_columns(report.windows_s);
  char line[1024];
  std::snprintf(line, sizeof line, "%-*s", label_w, "controller");
  std::string s = line;
  for (const TableColumn& c : cols) s += padded(c.header, c.width);
  s += "\n";
  for (size_t i = 0; i < report.controllers.size(); ++i) {
    const ControllerSummary& r = report.controllers[i];
    const CellContext ctx{report, out["controllers"][i]};
    std::snprintf(line, sizeof line, "%-*s", label_w, r.label.c_str());
    s += line;
    for (const TableColumn& c : cols) s += padded(c.cell(r, ctx), c.width);
    s += "\n";
  }
  return s;
}

// Windows curve, peak demand and cost: one line per controller.
std::string curve_table(const EvalRequest& req, const EvalReport& report, int w) {
  std::string s =
      "\nviolation rate (%, pooled over seeds) by window; shortest window at which the budget "
      "held; 30 s peak of the summed power as a share of nameplate, the oversubscription it "
      "supports; energy cost and CO2 at $" +
      std::to_string(req.cost.price_per_kwh).substr(0, 4) + "/kWh, " +
      std::to_string(req.cost.kg_co2_per_kwh).substr(0, 4) + " kg/kWh\n";
  char line[1024];
  std::snprintf(line, sizeof line, "%-*s", w, "controller");
  s += line;
  for (double win : report.windows_s) {
    std::snprintf(line, sizeof line, " %6s", (window_key(win) + "s").c_str());
    s += line;
  }
  std::snprintf(line, sizeof line, "  %8s  %10s  %8s  %10s  %8s\n", "holds at", "peak/name",
                "oversub", "$/Mtok", "kg CO2");
  s += line;
  for (const ControllerSummary& r : report.controllers) {
    std::snprintf(line, sizeof line, "%-*s", w, r.label.c_str());
    s += line;
    for (const WindowStats& p : r.curve.points) {
      if (p.windows > 0) {
        std::snprintf(line, sizeof line, " %6.2f", 100 * p.violation_rate);
      } else {
        std::snprintf(line, sizeof line, " %6s", "-");  // longer than the run: no verdict
      }
      s += line;
    }
    const double h = r.curve.shortest_holding_window_s;
    const double share = r.peak_share_of_nameplate.mean, ov = r.oversubscription_ratio.mean;
    char share_s[32] = "-", ov_s[32] = "-";
    if (std::isfinite(share)) std::snprintf(share_s, sizeof share_s, "%.1f%%", 100 * share);
    if (std::isfinite(ov)) std::snprintf(ov_s, sizeof ov_s, "%.2fx", ov);
    std::snprintf(line, sizeof line, "  %8s  %10s  %8s  %10.3f  %8.3f\n",
                  std::isfinite(h) ? (window_key(h) + " s").c_str() : "never", share_s, ov_s,
                  r.cost.usd_per_million_tokens, r.cost.co2_kg);
    s += line;
  }
  return s;
}

std::string calibration_lines(const EvalRequest& req, const EvalReport& report) {
  const Budget& b0 = req.scenario.budget.entries.front().budget;
  std::string s;
  char line[1024];
  for (const ControllerSummary& r : report.controllers) {
    if (!r.notes.contains("calibration")) continue;
    const auto& cal = r.notes["calibration"];
    std::snprintf(line, sizeof line,
                  "\n%s: calibrated %s = %g on seeds %s (worst %.0f s window at %.3f x budget%s)",
                  r.label.c_str(), r.notes["actuator"].get<std::string>().c_str(),
                  cal["value"].get<double>(), cal["seeds"].dump().c_str(), b0.window_s,
                  cal["worst_window_ratio"].get<double>(),
                  cal["safe_found"].get<bool>() ? "" : "; NO safe setting found");
    s += line;
  }
  return s;
}

}  // namespace

std::vector<TableColumn> eval_table_columns(const std::vector<double>& windows_s) {
  std::vector<TableColumn> cols = {
      {"tokens", "tokens", 20, stat_cell(&ControllerSummary::tokens, 1, 0)},
      {"energy_kwh", "energy kWh", 14, stat_cell(&ControllerSummary::energy_j, 1 / 3.6e6, 3)},
      {"tokens_per_mwh", "tokens/MWh", 20, stat_cell(&ControllerSummary::tokens_per_mwh, 1, 0)}};
  for (size_t w = 0; w < windows_s.size(); ++w) {
    if (!is_headline_window(windows_s[w])) continue;
    cols.push_back({"violation_rate_" + window_key(windows_s[w]) + "s",
                    "viol " + window_key(windows_s[w]) + "s %", 15,
                    [w](const ControllerSummary& r, const CellContext&) {
                      return fmt_stat(r.violation_rate[w], 100, 2);
                    }});
  }
  std::vector<TableColumn> tail = {
      {"violation_rate_sliding", "slide win %", 15,
       stat_cell(&ControllerSummary::sliding_violation_rate, 100, 2)},
      {"tokens_vs_static", "tok/stat", 8, ratio_cell("vs_static", "tokens")},
      {"tokens_per_mwh_vs_static", "tpm/stat", 8, ratio_cell("vs_static", "tokens_per_mwh")},
      {"violation_rate_30_vs_static", "v30/stat", 8, ratio_cell("vs_static", "violation_rate_30")},
      {"tokens_vs_oracle", "tok/orcl", 8, ratio_cell("vs_oracle", "tokens")},
      {"limiter_interventions", "limiter", 8, [](const ControllerSummary& r, const CellContext&) {
         return fixed0(r.interventions.mean);
       }}};
  cols.insert(cols.end(), tail.begin(), tail.end());
  return cols;
}

const std::vector<CsvColumn>& summary_csv_columns() {
  static const auto violation = [](double window_s) {
    return [window_s](const ControllerSummary& c, const EvalReport& r) {
      const int i = r.window_index(window_s);
      return i < 0 ? kUnset : c.violation_rate[i].mean;
    };
  };
  static const std::vector<CsvColumn> cols = {
      {"tokens_mean", [](const ControllerSummary& c, const EvalReport&) { return c.tokens.mean; }},
      {"tokens_ci95", [](const ControllerSummary& c, const EvalReport&) { return c.tokens.ci95; }},
      {"energy_j_mean",
       [](const ControllerSummary& c, const EvalReport&) { return c.energy_j.mean; }},
      {"tokens_per_mwh_mean",
       [](const ControllerSummary& c, const EvalReport&) { return c.tokens_per_mwh.mean; }},
      {"violation_rate_0.5s", violation(0.5)},
      {"violation_rate_30s", violation(30)},
      {"violation_rate_300s", violation(300)}};
  return cols;
}

std::string format_eval_table(const EvalRequest& req, const EvalReport& report) {
  std::string s = title_line(req);
  s += "mean ±95% CI across seeds (t-distribution); violation = share of tumbling windows whose "
       "mean exceeded the budget; slide win = share of samples whose trailing budget-window mean "
       "exceeded it\n\n";
  int w = 10;
  for (const auto& c : report.controllers) w = std::max<int>(w, static_cast<int>(c.label.size()));
  s += main_table(req, report, w);
  s += curve_table(req, report, w);
  s += calibration_lines(req, report);
  char line[1024];
  std::snprintf(line, sizeof line, "\n%s(wall %.1f s)\n",
                req.out_dir.empty() ? "" : ("traces: " + req.out_dir + "/  ").c_str(),
                report.wall_s);
  return s + line;
}

}  // namespace fw::experiment

#include "eval/eval_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fw::eval {
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
  std::vector<TableColumn> cols = eval_table_columns(report.windows_s);
  if (!report.energy_vs.empty()) {
    for (TableColumn& c : energy_vs_columns()) cols.push_back(std::move(c));
  }
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
      "\naligned violation rate (%, tumbling windows from t = 0, pooled over seeds; - = window "
      "longer than the run) by window; total tokens (completed or not); shortest window at which "
      "the budget "
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
  std::snprintf(line, sizeof line, "  %10s  %8s  %10s  %8s  %10s  %8s\n", "tokens", "holds at",
                "peak/name", "oversub", "$/Mtok", "kg CO2");
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
    std::snprintf(line, sizeof line, "  %10.0f  %8s  %10s  %8s  %10.3f  %8.3f\n", r.tokens.mean,
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
    if (r.notes.contains("search")) {
      const auto& se = r.notes["search"];
      std::snprintf(line, sizeof line,
                    "\n  joint search of %s: setting %s; %d points, %d episodes, %.1f s wall; "
                    "calibration tokens %.0f after the grid, %.0f refined",
                    se["actuators"].get<std::string>().c_str(), r.notes["setting"].dump().c_str(),
                    se["points"].get<int>(), se["episodes"].get<int>(), r.prepare_s,
                    se["grid_best_completed_tokens"].get<double>(),
                    se["best_completed_tokens"].get<double>());
      s += line;
    }
  }
  return s;
}

}  // namespace

std::vector<TableColumn> eval_table_columns(const std::vector<double>& windows_s) {
  (void)windows_s;  // the aligned per-window rates are a detail (the curve table)
  std::vector<TableColumn> cols = {
      {"completed_step_tokens", "step tokens", 20,
       stat_cell(&ControllerSummary::completed_tokens, 1, 0)},
      {"steps_per_hour", "steps/h", 8,
       [](const ControllerSummary& r, const CellContext&) {
         char b[32];
         std::snprintf(b, sizeof b, "%.1f", r.steps_per_hour.mean);
         return std::string(b);
       }},
      {"tokens_per_step", "tok/step", 8,
       [](const ControllerSummary& r, const CellContext&) {
         return fixed0(r.tokens_per_step.mean);
       }},
      {"tokens_per_mwh", "tokens/MWh", 20, stat_cell(&ControllerSummary::tokens_per_mwh, 1, 0)},
      {"violation_rate_offsets", "viol win %", 15,
       stat_cell(&ControllerSummary::offset_violation_rate, 100, 2)},
      {"violation_rate_sliding", "slide win %", 15,
       stat_cell(&ControllerSummary::sliding_violation_rate, 100, 2)},
      {"steps_violating", "steps viol %", 15,
       stat_cell(&ControllerSummary::steps_violating, 100, 1)},
      {"completed_step_tokens_vs_reference", "tok/ref", 8,
       ratio_cell("vs_reference", "completed_step_tokens")},
      {"tokens_per_mwh_vs_reference", "tpm/ref", 8, ratio_cell("vs_reference", "tokens_per_mwh")},
      {"completed_step_tokens_vs_lookahead", "tok/look", 8,
       ratio_cell("vs_lookahead", "completed_step_tokens")},
      {"limiter_interventions", "limiter", 8,
       [](const ControllerSummary& r, const CellContext&) { return fixed0(r.interventions.mean); }},
      // What the arm ran before deployment (notes["setup_cost"]: calibration, training), in
      // simulated GPU-hours; "-" for arms that need none; "in run" for Zeus's profiling.
      {"setup_gpu_h", "setup GPU-h", 12, [](const ControllerSummary& r, const CellContext&) {
         if (!r.notes.contains("setup_cost")) return std::string("-");
         const nlohmann::json& c = r.notes["setup_cost"];
         const double h = c.value("gpu_h", 0.0);
         if (h == 0 && c.value("what", std::string()).rfind("profiling", 0) == 0) {
           return std::string("in run");
         }
         char b[32];
         std::snprintf(b, sizeof b, h < 10 ? "%.2f" : "%.0f", h);
         return std::string(b);
       }}};
  return cols;
}

std::vector<TableColumn> energy_vs_columns() {
  return {{"energy_saved", "saved %", 14, stat_cell(&ControllerSummary::energy_saved, 100, 2)},
          {"throughput_lost", "lost %", 14, stat_cell(&ControllerSummary::throughput_lost, 100, 2)},
          {"edp_change", "EDP %", 14, stat_cell(&ControllerSummary::edp_change, 100, 2)}};
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
      {"violation_rate_300s", violation(300)},
      {"violation_rate_offsets",
       [](const ControllerSummary& c, const EvalReport&) { return c.offset_violation_rate.mean; }},
      {"violation_rate_sliding",
       [](const ControllerSummary& c, const EvalReport&) { return c.sliding_violation_rate.mean; }},
      {"completed_step_tokens_mean",
       [](const ControllerSummary& c, const EvalReport&) { return c.completed_tokens.mean; }},
      {"steps_per_hour_mean",
       [](const ControllerSummary& c, const EvalReport&) { return c.steps_per_hour.mean; }},
      {"steps_violating_mean",
       [](const ControllerSummary& c, const EvalReport&) { return c.steps_violating.mean; }}};
  return cols;
}

// The reference line's text: the row, or with --reference auto each reference and its rows.
std::string reference_text(const EvalReport& report) {
  if (!report.auto_reference) {
    return report.reference >= 0 ? report.controllers[report.reference].label : "none";
  }
  std::string s = "auto, each row against the joint static over the actuators it claims (";
  std::vector<int> seen;
  for (size_t c = 0; c < report.controllers.size(); ++c) {
    const int r = report.reference_of(c);
    if (r < 0 || std::find(seen.begin(), seen.end(), r) != seen.end()) continue;
    seen.push_back(r);
    std::string rows;
    for (size_t k = 0; k < report.controllers.size(); ++k) {
      if (report.reference_of(k) == r && static_cast<int>(k) != r) {
        rows += " " + report.controllers[k].label;
      }
    }
    s += (seen.size() > 1 ? "; " : "") + report.controllers[r].label +
         (rows.empty() ? " for itself" : " for" + rows);
  }
  return s + ")";
}

std::string format_eval_table(const EvalRequest& req, const EvalReport& report) {
  std::string s = title_line(req);
  const double win_s = req.scenario.budget.entries.front().budget.window_s;
  char head[4096];
  std::snprintf(
      head, sizeof head,
      "mean ±95%% CI across seeds (t-distribution); step tokens = tokens of completed steps; "
      "viol win = share of tumbling %.0f s windows over the budget, mean over %d evenly spaced "
      "window offsets; slide win = share of samples whose trailing %.0f s mean exceeded it; "
      "steps viol = share of completed steps during which the trailing %.0f s mean exceeded "
      "it; aligned (t = 0) rates are in the detail table\nreference (tok/ref, tpm/ref): %s; "
      "tok/look: share of the look-ahead reference's step tokens; setup GPU-h = simulated "
      "GPU-hours the arm ran before deployment (static: calibration episodes; ppo: training), "
      "\"in run\" = inside the episode (zeus's profiling)\n\n",
      win_s, kWindowOffsets, win_s, win_s, reference_text(report).c_str());
  s += head;
  if (!report.energy_vs.empty()) {
    std::snprintf(head, sizeof head,
                  "saved / lost / EDP: against %s on the same seed, per completed-step token: "
                  "saved = 1 - (E/N)/(E0/N0), lost = 1 - N/N0, EDP = (1 - saved)/(1 - lost) - 1; "
                  "E = GPU board energy (the simulator has no host power: board = GPU)\n\n",
                  report.energy_vs.c_str());
    s.resize(s.size() - 1);  // one blank line before the table
    s += head;
  }
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

}  // namespace fw::eval

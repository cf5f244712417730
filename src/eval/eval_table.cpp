#include "eval/eval_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/format.hpp"

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

std::string left_out_line(const std::vector<std::string>& left_out) {
  if (left_out.empty()) return "";
  std::string s = "not shown (--wide shows them):";
  for (size_t i = 0; i < left_out.size(); ++i) s += (i ? ", " : " ") + left_out[i];
  return s + "\n";
}

std::string main_table(const EvalRequest& req, const EvalReport& report, const TextStyle& style) {
  const nlohmann::json out = report.to_json(req);
  std::vector<TableColumn> cols = eval_table_columns(report.windows_s);
  if (!report.energy_vs.empty()) {
    for (TableColumn& c : energy_vs_columns()) cols.push_back(std::move(c));
  }
  TextTable t;
  t.label_header = "controller";
  for (const TableColumn& c : cols) t.columns.push_back({c.header, c.rank});
  for (size_t i = 0; i < report.controllers.size(); ++i) {
    const ControllerSummary& r = report.controllers[i];
    const CellContext ctx{report, out["controllers"][i]};
    std::vector<std::string> row = {r.label};
    for (const TableColumn& c : cols) row.push_back(c.cell(r, ctx));
    t.rows.push_back(std::move(row));
  }
  std::vector<std::string> left_out;
  std::string s = render_table(t, style, &left_out);
  return s + left_out_line(left_out);
}

// Windows curve, peak demand and cost: one line per controller.
std::string curve_table(const EvalRequest& req, const EvalReport& report, const TextStyle& style) {
  std::string s =
      wrap_text(
          "\naligned violation rate (%, tumbling windows from t = 0, pooled over seeds; - = window "
          "longer than the run) by window; total tokens (completed or not); shortest window at "
          "which "
          "the budget held; 30 s peak of the summed power as a share of nameplate, the "
          "oversubscription it supports; energy cost and CO2 at $" +
              std::to_string(req.cost.price_per_kwh).substr(0, 4) + "/kWh, " +
              std::to_string(req.cost.kg_co2_per_kwh).substr(0, 4) + " kg/kWh",
          style.width) +
      "\n";
  TextTable t;
  t.label_header = "controller";
  for (double win : report.windows_s) t.columns.push_back({window_key(win) + "s", 1});
  t.columns.push_back({"tokens", 3});
  t.columns.push_back({"holds at", 1});
  t.columns.push_back({"peak/name", 2});
  t.columns.push_back({"oversub", 2});
  t.columns.push_back({"$/Mtok", 3});
  t.columns.push_back({"kg CO2", 3});
  char b[64];
  for (const ControllerSummary& r : report.controllers) {
    std::vector<std::string> row = {r.label};
    for (const WindowStats& p : r.curve.points) {
      // longer than the run: no verdict
      row.push_back(p.windows > 0 ? format_fixed(100 * p.violation_rate, 2) : "-");
    }
    const double h = r.curve.shortest_holding_window_s;
    const double share = r.peak_share_of_nameplate.mean, ov = r.oversubscription_ratio.mean;
    row.push_back(fixed0(r.tokens.mean));
    row.push_back(std::isfinite(h) ? window_key(h) + " s" : "never");
    row.push_back(std::isfinite(share) ? format_fixed(100 * share, 1) + "%" : "-");
    if (std::isfinite(ov)) {
      std::snprintf(b, sizeof b, "%.2fx", ov);
      row.push_back(b);
    } else {
      row.push_back("-");
    }
    row.push_back(format_fixed(r.cost.usd_per_million_tokens, 3));
    row.push_back(format_fixed(r.cost.co2_kg, 3));
    t.rows.push_back(std::move(row));
  }
  std::vector<std::string> left_out;
  s += render_table(t, style, &left_out);
  return s + left_out_line(left_out);
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

// Two lines per row, each within 120 columns for a label of ~50 characters: the wall µs per
// update() call (ControllerSummary::decision_us), the calls, the label (labels hold
// spaces-free commas and colons), the worst call and the 99th percentile; then the calling
// thread's CPU per call (mean, label, max, p99). Fields: `decision_us` $2 mean, $4 calls,
// $5 label, $7 max, $9 p99; `decision_cpu_us` $2 mean, $3 label, $5 max, $7 p99.
std::string decision_cost_lines(const EvalReport& report) {
  std::string s =
      "\ndecision cost (us per update() call, all seeds; wall, then the calling thread's CPU; "
      "not in the JSON):";
  char line[1024];
  for (const ControllerSummary& r : report.controllers) {
    std::snprintf(line, sizeof line,
                  "\n  decision_us %.3f calls %.0f %s max_us %.1f p99_us %.2f"
                  "\n  decision_cpu_us %.3f %s max_us %.1f p99_us %.2f",
                  r.decision_us, r.decisions, r.label.c_str(), r.decision_max_us, r.decision_p99_us,
                  r.decision_cpu_us, r.label.c_str(), r.decision_cpu_max_us, r.decision_cpu_p99_us);
    s += line;
  }
  return s + "\n";
}

}  // namespace

std::vector<TableColumn> eval_table_columns(const std::vector<double>& windows_s) {
  (void)windows_s;  // the aligned per-window rates are a detail (the curve table)
  std::vector<TableColumn> cols = {
      {"completed_step_tokens", "step tokens", 1,
       stat_cell(&ControllerSummary::completed_tokens, 1, 0)},
      {"steps_per_hour", "steps/h", 0,
       [](const ControllerSummary& r, const CellContext&) {
         char b[32];
         std::snprintf(b, sizeof b, "%.1f", r.steps_per_hour.mean);
         return std::string(b);
       }},
      {"tokens_per_step", "tok/step", 0,
       [](const ControllerSummary& r, const CellContext&) {
         return fixed0(r.tokens_per_step.mean);
       }},
      // In readable units (k, M, G), the CI in the mean's.
      {"tokens_per_mwh", "tokens/MWh", 1,
       [](const ControllerSummary& r, const CellContext&) {
         return format_si_pm(r.tokens_per_mwh.mean, r.tokens_per_mwh.ci95);
       }},
      {"violation_rate_offsets", "viol win %", 1,
       stat_cell(&ControllerSummary::offset_violation_rate, 100, 2)},
      {"violation_rate_sliding", "slide win %", 0,
       stat_cell(&ControllerSummary::sliding_violation_rate, 100, 2)},
      {"steps_violating", "steps viol %", 2,
       stat_cell(&ControllerSummary::steps_violating, 100, 1)},
      {"completed_step_tokens_vs_reference", "tok/ref", 1,
       ratio_cell("vs_reference", "completed_step_tokens")},
      {"tokens_per_mwh_vs_reference", "tpm/ref", 2, ratio_cell("vs_reference", "tokens_per_mwh")},
      {"completed_step_tokens_vs_lookahead", "tok/look", 3,
       ratio_cell("vs_lookahead", "completed_step_tokens")},
      {"limiter_interventions", "limiter", 0,
       [](const ControllerSummary& r, const CellContext&) { return fixed0(r.interventions.mean); }},
      // What the arm ran before deployment (notes["setup_cost"]: calibration, training), in
      // simulated GPU-hours; "-" for arms that need none; "in run" for Zeus's profiling.
      {"setup_gpu_h", "setup GPU-h", 3, [](const ControllerSummary& r, const CellContext&) {
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
  return {{"energy_saved", "saved %", 1, stat_cell(&ControllerSummary::energy_saved, 100, 2)},
          {"throughput_lost", "lost %", 1, stat_cell(&ControllerSummary::throughput_lost, 100, 2)},
          {"edp_change", "EDP %", 2, stat_cell(&ControllerSummary::edp_change, 100, 2)}};
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
  std::string s =
      "auto, each row against the strongest safe fixed setting over the actuators it claims: "
      "the joint static searched on the calibration seeds, or a listed fixed setting of those "
      "actuators that made more step tokens here at no more violations (";
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

std::string format_eval_table(const EvalRequest& req, const EvalReport& report,
                              const TextStyle& style, bool decision_cost) {
  std::string s = wrap_text(title_line(req), style.width);
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
  s += wrap_text(head, style.width);
  if (!report.energy_vs.empty()) {
    std::snprintf(head, sizeof head,
                  "saved / lost / EDP: against %s on the same seed, per completed-step token: "
                  "saved = 1 - (E/N)/(E0/N0), lost = 1 - N/N0, EDP = (1 - saved)/(1 - lost) - 1; "
                  "E = GPU board energy (the simulator has no host power: board = GPU)\n\n",
                  report.energy_vs.c_str());
    s.resize(s.size() - 1);  // one blank line before the table
    s += wrap_text(head, style.width);
  }
  s += main_table(req, report, style);
  s += curve_table(req, report, style);
  s += wrap_text(calibration_lines(req, report), style.width, "    ");
  if (decision_cost) s += decision_cost_lines(report);
  char line[1024];
  std::snprintf(line, sizeof line, "\n%s(wall %.1f s)\n",
                req.out_dir.empty() ? "" : ("traces: " + req.out_dir + "/  ").c_str(),
                report.wall_s);
  return s + line;
}

namespace {

bool same_stat(const Stat& a, const Stat& b) {
  auto eq = [](double x, double y) {
    return (std::isnan(x) && std::isnan(y)) || std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(x));
  };
  return eq(a.mean, b.mean) && eq(a.ci95, b.ci95);
}

bool same_results(const ControllerSummary& a, const ControllerSummary& b) {
  if (a.episodes.size() != b.episodes.size()) return false;
  return same_stat(a.completed_tokens, b.completed_tokens) && same_stat(a.tokens, b.tokens) &&
         same_stat(a.energy_j, b.energy_j) &&
         same_stat(a.offset_violation_rate, b.offset_violation_rate) &&
         same_stat(a.sliding_violation_rate, b.sliding_violation_rate) &&
         same_stat(a.steps_violating, b.steps_violating);
}

}  // namespace

std::vector<std::string> merge_identical_rows(EvalReport& report) {
  std::vector<std::string> notes;
  const size_t n = report.controllers.size();
  std::vector<int> keeper(n);  // old row -> the old row it is shown as
  for (size_t i = 0; i < n; ++i) {
    keeper[i] = static_cast<int>(i);
    for (size_t k = 0; k < i; ++k) {
      if (keeper[k] == static_cast<int>(k) &&
          same_results(report.controllers[k], report.controllers[i])) {
        keeper[i] = static_cast<int>(k);
        break;
      }
    }
  }
  std::vector<int> index(n, -1);  // old row -> new row
  std::vector<ControllerSummary> kept;
  std::vector<int> kept_ref;
  for (size_t i = 0; i < n; ++i) {
    if (keeper[i] != static_cast<int>(i)) continue;
    index[i] = static_cast<int>(kept.size());
    kept.push_back(report.controllers[i]);
  }
  for (size_t i = 0; i < n; ++i) {
    if (keeper[i] == static_cast<int>(i)) continue;
    ControllerSummary& k = kept[static_cast<size_t>(index[static_cast<size_t>(keeper[i])])];
    notes.push_back(report.controllers[i].label + ": the same results as " +
                    report.controllers[static_cast<size_t>(keeper[i])].label +
                    " on every seed (one setting): shown once, as \"" + k.label + " = " +
                    report.controllers[i].label + "\"");
    k.label += " = " + report.controllers[i].label;
  }
  auto remap = [&](int old) {
    return old < 0 ? -1 : index[static_cast<size_t>(keeper[static_cast<size_t>(old)])];
  };
  report.reference = remap(report.reference);
  if (!report.row_reference.empty()) {
    for (size_t i = 0; i < n && i < report.row_reference.size(); ++i) {
      if (keeper[i] == static_cast<int>(i)) kept_ref.push_back(remap(report.row_reference[i]));
    }
    report.row_reference = std::move(kept_ref);
  }
  report.controllers = std::move(kept);
  return notes;
}

}  // namespace fw::eval

#pragma once
// The human table of `flexwatt eval` (and `flexwatt demo`) and the demo's summary CSV, each
// driven by a table of columns: a new metric is one entry.

#include <functional>
#include <string>
#include <vector>

#include "core/text_table.hpp"
#include "eval/evaluation.hpp"

namespace fw::eval {

// What a cell may look at besides its row: the report and its JSON (for the ratios).
struct CellContext {
  const EvalReport& report;
  const nlohmann::json& row_json;  // the row's entry of EvalReport::to_json()["controllers"]
};

// One column of the main eval table: key (machine name), header, rank (core/text_table.hpp:
// 0 = only with --wide; higher ranks are left out first to fit 120 columns) and the cell's
// text. Cells are right aligned, each column as wide as its widest cell.
struct TableColumn {
  std::string key;
  std::string header;
  int rank = 1;
  std::function<std::string(const ControllerSummary&, const CellContext&)> cell;
};

// The main table's columns after "controller", in order, for a report with these windows
// (one violation column per headline window).
std::vector<TableColumn> eval_table_columns(const std::vector<double>& windows_s);

// The columns added with EvalRequest::energy_vs: energy saved, throughput lost, EDP change (%).
std::vector<TableColumn> energy_vs_columns();

// One column of the demo's summary.csv: key (the CSV header) and the value.
struct CsvColumn {
  std::string key;
  std::function<double(const ControllerSummary&, const EvalReport&)> value;
};
// The summary.csv columns between "controller" and "simulated".
const std::vector<CsvColumn>& summary_csv_columns();

// The human table of `flexwatt eval` (labelled simulated): by default it fits style.width
// columns (prose wrapped; detail columns left out and named in a line under the table);
// style.wide: every column.
// decision_cost: the per-row decision cost lines (wall and CPU µs per update(); results.sh reads
// them from eval's output; the demo shows them under --verbose only).
std::string format_eval_table(const EvalRequest& req, const EvalReport& report,
                              const TextStyle& style = {}, bool decision_cost = true);

// Rows of the same results on every seed (two specs that resolve to one setting, e.g. the
// group-size static and the joint knob static when both pick group_size 6) printed once: the
// later row is removed, the first is relabelled "A = B", and the reference indices are
// remapped. For the human table only (the JSON keeps every row). Returns one note per merge.
std::vector<std::string> merge_identical_rows(EvalReport& report);

}  // namespace fw::eval

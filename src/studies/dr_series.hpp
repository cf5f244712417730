#pragma once
// A timestamped power series for `flexwatt dr replay --measured-total` / `--field-projection`:
// CSV, first column a timestamp, one value column (W). Timestamps: `YYYY-MM-DD HH:MM[:SS[.f]]`
// with an optional UTC offset (ignored: one zone per file) or a bare `HH:MM[:SS]` (one day).
// The value column: the one whose name starts with "total" (e.g. `total (W)`), else the second
// of a two-column file. Times are seconds after the first row. Errors name path:line: field.

#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::studies {

struct DrSeries {
  std::string path, column;
  std::vector<double> time_s;  // ascending, from 0
  std::vector<double> value_w;
};

Result<DrSeries> read_dr_series(const std::string& path);
// The same for the first column (after the timestamp) whose name starts with column_prefix
// (e.g. a job's column of aps_job_power_w.csv, "ft_llama_8b_dolly" for
// "ft_llama_8b_dolly-txw0sl4h"); InvalidArgument naming path:1 when none does.
Result<DrSeries> read_dr_series(const std::string& path, const std::string& column_prefix);

// Seconds since 0000-03-01 of a timestamp as above (for differences only); false if malformed.
bool parse_dr_timestamp(const std::string& s, double& out_s);

// Value of a step series (zero-order hold) at t_s; the first value before the first time.
double dr_series_hold_at(const DrSeries& s, double t_s);

}  // namespace fw::studies

#pragma once
// Validators for numeric flags (CLI11). A value that is not a number, not finite or out of
// range is a usage error (exit 2) naming the flag, raised while the arguments are parsed, so a
// verb never starts work on it (nor treats it as "not given").

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "core/status.hpp"

namespace fw::cli {

// A finite number in [lo, hi] ((lo, hi] when lo_open); nan and ±inf are refused.
CLI::Validator finite_in(double lo, double hi, bool lo_open = false);

// A seed: a non-negative integer, at most 2^63 − 1 (so "-1" never wraps around).
CLI::Validator seed_value();

// An output file the verb will write at its end: not a directory, in a directory that exists
// and is writable — checked before the work, so a long run never ends in "cannot write".
CLI::Validator output_file();

// --quiet: no progress line on stderr (cli/progress.hpp; shown only on a terminal anyway).
void add_quiet_flag(CLI::App& app, bool& quiet);
// --wide: every column of the tables, with no 120-column limit (core/text_table.hpp).
void add_wide_flag(CLI::App& app, bool& wide);

// --gpus "0,2,5": GPU indices (integers 0..kMaxGpuIndex) appended to `out`; InvalidArgument
// naming the flag otherwise.
Status parse_gpu_indices(const std::string& list, std::vector<int>& out);

}  // namespace fw::cli

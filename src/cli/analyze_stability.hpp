#pragma once
// `flexwatt analyze --stability`: ramp rates, swings and band energy of a node's or a site's
// power (analysis/stability.hpp; docs/stability.md). analyze.cpp hands the whole command line
// over when it holds --stability.

namespace fw::cli {

// True when argv (a verb's arguments, argv[0] the verb) holds the flag --stability.
bool wants_stability(int argc, char** argv);

// Runs the stability analysis. Exit codes: 0 (no limit given, or every limit held), 1 (a
// limit given was violated; the report is still printed), 2 (bad usage or bad input: the
// message names the flag, or the file, line and field).
int run_analyze_stability(int argc, char** argv);

}  // namespace fw::cli

#!/usr/bin/env bash
# docs/analysis.md's table of `flexwatt analyze` against pandas, DuckDB and Polars, from one
# run of bench/analyze_vs_pandas.py (the last step of `make bench`: the generated 10 M-row,
# 8-GPU trace, best of 3 wall, least of 3 CPU each) written to stdout: the command, the load
# average before and after, the table and whether the four agreed on every window's violation
# count. Wall-clock: the figures move with the machine's load, which the block states. Part of
# `make results-all` (scripts/results.sh splices it between the bench-engines markers).
# Needs what `make bench-deps` installs (python3-pandas; DuckDB and Polars in bench/node_modules).
# With FLOOR_MD it also writes there the parse-floor table of the same run (parse_floor's lines,
# then one BM_AnalysisOnly run of ANALYZE_BENCH_BIN; scripts/parse_floor_table.sh).
#   scripts/bench_table.sh FLEXWATT_BIN ANALYZE_BENCH_BIN [FLOOR_MD]
# Exit 2 on bad arguments, 1 when a dependency is missing or the bench fails (counts differ).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# = 2 ] || [ $# = 3 ] || { echo "usage: scripts/bench_table.sh FLEXWATT_BIN ANALYZE_BENCH_BIN [FLOOR_MD]" >&2; exit 2; }
bin=$1 bench=$2 floor_md=${3:-}
[ -x "$bin" ] || { echo "bench_table.sh: $bin is not an executable" >&2; exit 2; }
[ -x "$bench" ] || { echo "bench_table.sh: $bench is not an executable" >&2; exit 2; }
py=/usr/bin/python3
pandas_v=$("$py" -c 'import pandas; print(pandas.__version__)' 2>/dev/null) ||
  { echo "bench_table.sh: $py has no pandas (make bench-deps)" >&2; exit 1; }
polars_v=$(jq -r .version bench/node_modules/nodejs-polars/package.json 2>/dev/null) ||
  { echo "bench_table.sh: bench/node_modules lacks nodejs-polars (make bench-deps)" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$py" bench/analyze_vs_pandas.py "$bin" "$bench" >"$tmp/out.txt" 2>"$tmp/err.txt" ||
  { echo "bench_table.sh: bench/analyze_vs_pandas.py failed:" >&2; tail -5 "$tmp/out.txt" "$tmp/err.txt" >&2; exit 1; }
if [ -n "$floor_md" ]; then
  "$bench" --benchmark_filter=BM_AnalysisOnly --benchmark_format=json >"$tmp/ao.json" 2>"$tmp/ao.err" ||
    { echo "bench_table.sh: $bench --benchmark_filter=BM_AnalysisOnly failed" >&2; exit 1; }
  bash scripts/parse_floor_table.sh "$tmp/out.txt" "$tmp/ao.json" >"$floor_md"
fi
before=$(sed -n 's/.*load average before \([0-9.]*\).*/\1/p' "$tmp/out.txt")
after=$(sed -n 's/.*load average after \([0-9.]*\).*/\1/p' "$tmp/out.txt")
trace=$(sed -n 's/^trace: [^(]*(\([0-9]*\) rows, \([0-9]*\) MB).*/\1 rows, \2 MB/p' "$tmp/out.txt")
windows=$(sed -n 's/^  window *\([0-9.]*\) s,.*/\1/p' "$tmp/out.txt" | paste -sd, - | sed 's/,/, /g')
if grep -q "^  window .* DIFFERENT$" "$tmp/out.txt"; then
  agree="The violation counts DIFFER between the engines (bench/analyze_vs_pandas.py's output)."
else
  agree="Violation counts identical in all four at $windows s."
fi
echo '```'
echo "/usr/bin/python3 bench/analyze_vs_pandas.py build/flexwatt build/bench/analyze_bench"
echo '```'
echo
echo "One run on the generated trace ($trace), $(nproc) CPUs, load average $before before and $after after"
echo "(wall times move with the load, CPU times less so); DuckDB and Polars each on every core:"
echo
echo "| | wall | CPU | analyze faster, wall | analyze faster, CPU |"
echo "|---|---|---|---|---|"
# The side-by-side lines: NAME... wall M-rows/s cpu Nx Mx (the line after the header).
awk -v pv="$pandas_v" -v plv="$polars_v" '
  /analyze faster \(wall\)/ { on = 1; next }
  on && /^  window / { exit }
  on && NF >= 6 {
    n = NF; cpu_x = $n; wall_x = $(n - 1); cpu = $(n - 2); wall = $(n - 4)
    name = $1; for (i = 2; i <= n - 5; i++) name = name " " $i
    sub(/x$/, "", wall_x); sub(/x$/, "", cpu_x)
    if (name == "flexwatt analyze") name = "`flexwatt analyze` (default threads)"
    else if (name == "pandas") name = "pandas " pv
    else if (name ~ /^Polars/) sub(/^Polars/, "Polars " plv, name)
    fmt = (name ~ /^`flexwatt/) ? "1" : ""
    printf "| %s | %.3g s | %.3g s | %s | %s |\n", name, wall, cpu,
      (fmt == "1" ? "1" : sprintf("%.1f×", wall_x)), (fmt == "1" ? "1" : sprintf("%.1f×", cpu_x))
  }' "$tmp/out.txt"
echo
echo "$agree"

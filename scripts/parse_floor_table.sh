#!/usr/bin/env bash
# docs/analysis.md's parse-floor table ("The floor, measured") from one run of
# bench/analyze_vs_pandas.py (its stdout: analyze's and pandas' CPU time, then parse_floor's
# lines on the same 10 M-row trace) and one `analyze_bench --benchmark_filter=BM_AnalysisOnly
# --benchmark_format=json` run (the analysis alone over rows held in memory), written to stdout.
# Called by scripts/bench_table.sh (make results-all) with its run's output.
#   scripts/parse_floor_table.sh BENCH_OUT_TXT ANALYSIS_ONLY_JSON
# Exit 2 on bad arguments or an input without a line the table needs (naming it), 1 when an
# input file is missing.
set -euo pipefail
[ $# = 2 ] || { echo "usage: scripts/parse_floor_table.sh BENCH_OUT_TXT ANALYSIS_ONLY_JSON" >&2; exit 2; }
out=$1 json=$2
for f in "$out" "$json"; do [ -f "$f" ] || { echo "parse_floor_table.sh: $f: no such file" >&2; exit 1; }; done
command -v jq >/dev/null || { echo "parse_floor_table.sh: jq not installed" >&2; exit 1; }
# need PATTERN WHAT: the first line of $out matching PATTERN, or exit 2 naming WHAT.
need() {
  local l
  l=$(grep -m1 -E "$1" "$out" || true)
  [ -n "$l" ] || { echo "parse_floor_table.sh: $out: no line '$2'" >&2; exit 2; }
  printf '%s\n' "$l"
}
rows=$(need '^parse floor, one thread, [0-9]+ rows' "parse floor, one thread, N rows" | sed -E 's/^parse floor, one thread, ([0-9]+) rows.*/\1/')
floor() {  # PATTERN WHAT -> "S NS"
  need "$1" "$2" | sed -E 's/.*: *([0-9.]+) s +([0-9.]+) ns\/row.*/\1 \2/'
}
l=$(floor '^  split only' 'split only ...') || exit 2
read -r split_s split_ns <<<"$l"
l=$(floor '^  split \+ scalar conversion' 'split + scalar conversion ...') || exit 2
read -r scalar_s scalar_ns <<<"$l"
l=$(floor '^  split \+ 8-digit SWAR conversion' 'split + 8-digit SWAR conversion ...') || exit 2
read -r swar_s swar_ns <<<"$l"
same=$(need '^  scalar and SWAR columns identical: ' 'scalar and SWAR columns identical' | sed 's/.*: //')
fw_cpu=$(need '^flexwatt analyze \(default\): .* CPU [0-9.]+ s' 'flexwatt analyze (default): ... CPU S s' | sed -E 's/.*CPU ([0-9.]+) s.*/\1/')
pd=$(need '^pandas: .* CPU [0-9.]+ s' 'pandas: ... CPU S s')
pd_wall=$(sed -E 's/^pandas: +([0-9.]+) s.*/\1/' <<<"$pd")
pd_cpu=$(sed -E 's/.*CPU ([0-9.]+) s.*/\1/' <<<"$pd")
load=$(need 'load average before [0-9.]+' 'load average before' | sed -E 's/.*load average before ([0-9.]+).*/\1/')
ao=$(jq -r '[.benchmarks[]? | select(.run_name // .name | startswith("BM_AnalysisOnly"))][0]
  | if . == null then empty else (.real_time * ({"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1}[.time_unit // "ns"])) end' "$json" 2>/dev/null || true)
[ -n "$ao" ] || { echo "parse_floor_table.sh: $json: no BM_AnalysisOnly benchmark" >&2; exit 2; }
awk -v rows="$rows" -v ss="$split_s" -v sn="$split_ns" -v cs="$scalar_s" -v cn="$scalar_ns" \
    -v ws="$swar_s" -v wn="$swar_ns" -v same="$same" -v ao="$ao" -v fw="$fw_cpu" -v pw="$pd_wall" \
    -v pc="$pd_cpu" -v load="$load" 'BEGIN {
  printf "One `make bench` run (load average %s before), %d rows:\n\n", load, rows
  print "| | one core |"
  print "|---|---|"
  printf "| fields split only, power and energy not converted | %.3f s (%.1f ns a row) |\n", ss, sn
  printf "| split + the reader'"'"'s number conversion | %.3f s (%.1f ns a row) |\n", cs, cn
  printf "| split + an 8-digit SWAR conversion (same values, checked: %s) | %.3f s (%.1f ns a row) |\n", same, ws, wn
  printf "| the analysis alone (`BM_AnalysisOnly`) | %.3f s (%.1f ns a row) |\n", ao, ao / rows * 1e9
  printf "| `analyze` itself (parse with every check, analysis, kernel), CPU | %.3f s (two threads) |\n", fw
  printf "| pandas, CPU (wall) | %.3f s (%.3f s) |\n", pc, pw
}'

#!/usr/bin/env bash
# End-to-end: `flexwatt analyze` on the shipped examples (exit 0, JSON shape, table header).
# Usage: bash analyze_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
fails=0
check() {  # check NAME COMMAND...: the command must succeed
  local name=$1; shift
  if ! "$@"; then echo "FAIL: $name"; fails=$((fails + 1)); fi
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$bin" analyze --help > "$out/help.txt"; rc=$?
check "--help exits 0" test $rc -eq 0
check "--help shows an example" grep -q "Example" "$out/help.txt"

# Human table on the flexwatt example trace (the `make demo` command line).
"$bin" analyze "$src/data/examples/trace" --budget-w 2400 --windows 0.5,10,30 > "$out/table.txt"
rc=$?
check "table exits 0" test $rc -eq 0
check "table names the format" grep -q "flexwatt trace directory" "$out/table.txt"
check "table has the node row" grep -qE "^node +120 " "$out/table.txt"
check "table has tokens" grep -q "tokens 85200" "$out/table.txt"

# JSON on the 8-GPU nvidia-smi example.
"$bin" analyze "$src/data/examples/nvsmi_8gpu.csv" --budget-w 600 --scope gpu \
  --nameplate-w 700 --windows 0.5,1,5 --json > "$out/nvsmi.json"
rc=$?
check "json exits 0" test $rc -eq 0
j="$out/nvsmi.json"
for key in '"node": {' '"gpus": \[' '"tokens": null' '"tokens_per_mwh": null' \
           '"format": "nvidia-smi csv log"' '"missing_power_rows": 1'; do
  check "json has $key" grep -q "$key" "$j"
done
for key in gpu samples duration_s energy_j energy_source mean_power_w peak_power_w windows \
           window_s violation_rate peak_mean_w energy_over_budget_j peak_share_of_nameplate; do
  check "json has \"$key\"" grep -q "\"$key\":" "$j"
done
# 9 series (node + 8 GPUs), each with 3 windows.
check "9 series" test "$(grep -c '"energy_source":' "$j")" -eq 9
check "27 windows" test "$(grep -c '"window_s":' "$j")" -eq 27
check "gpu 7 present" grep -q '"gpu": 7,' "$j"
check "node label" grep -q '"gpu": "node"' "$j"

# JSON on the trace directory: tokens are numbers there.
"$bin" analyze "$src/data/examples/trace" --budget-w 2400 --json > "$out/trace.json"
check "trace json tokens" grep -qE '"tokens": 85200(\.0)?,' "$out/trace.json"
check "trace json energy from counters" grep -q '"energy_source": "counter"' "$out/trace.json"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "analyze_basic: all checks passed"

#!/usr/bin/env bash
# End-to-end: `flexwatt analyze` on the shipped examples (exit 0, JSON shape, table header).
# Usage: bash analyze_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

"$bin" analyze --help > "$out/help.txt"; rc=$?
check "--help exits 0" test $rc -eq 0
check "--help shows an example" grep -q "Example" "$out/help.txt"

# Human table on the flexwatt example trace (the `make demo` command line).
"$bin" analyze "$src/data/examples/trace" --budget-w 2400 --windows 0.5,10,30 > "$out/table.txt"
rc=$?
check "table exits 0" test $rc -eq 0
check "table names the format" grep -q "flexwatt trace directory" "$out/table.txt"
check "table has the node row" grep -qE "^node +120 " "$out/table.txt"
check "table has tokens in k/M/G" grep -q "tokens 85.2k, tokens per MWh [0-9.]*[kMG]$" "$out/table.txt"

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
check "27 windows" test "$(jq '[.node, .gpus[]] | map(.windows | length) | add' "$j")" -eq 27
check "gpu 7 present" grep -q '"gpu": 7,' "$j"
check "node label" grep -q '"gpu": "node"' "$j"

# JSON on the trace directory: tokens are numbers there.
"$bin" analyze "$src/data/examples/trace" --budget-w 2400 --json > "$out/trace.json"
check "trace json tokens" grep -qE '"tokens": 85200(\.0)?,' "$out/trace.json"
check "trace json energy from counters" grep -q '"energy_source": "counter"' "$out/trace.json"

# Windows curve, oversubscription and cost (issue 6): keys, values, flags.
for key in windows_curve oversubscription cost jobs simulated; do
  check "json has top-level $key" jqt "has(\"$key\")" "$j"
done
check "curve: default grid of 10" test "$(jq '.windows_curve.windows_s | length' "$j")" -eq 10
check "curve: node + 8 GPUs under scope gpu" \
  test "$(jq '.windows_curve.series | length' "$j")" -eq 9
check "curve: points have rates" jqt \
  '.windows_curve.series[1].points[0] | has("violation_rate") and has("holds")' "$j"
check "oversub: window 30, tolerance 0" jqt \
  '.oversubscription.window_s == 30 and .oversubscription.tolerance == 0' "$j"
check "oversub: nameplate from flag" jqt \
  '.oversubscription.nameplate_w == 5600 and .oversubscription.nameplate_source == "--nameplate-w"' "$j"
check "oversub: ratio = nameplate / provisioned" jqt \
  '.oversubscription | (.ratio - .nameplate_w / .provisioned_w) | fabs < 1e-9' "$j"
check "cost: defaults" jqt '.cost.price_per_kwh == 0.08 and .cost.kg_co2_per_kwh == 0.25' "$j"
check "cost: = energy x price" jqt \
  '.cost | (.cost_usd - .energy_kwh * 0.08) | fabs < 1e-12' "$j"
check "cost: energy_kwh = node energy" jqt \
  '(.cost.energy_kwh - .node.energy_j / 3.6e6) | fabs < 1e-9' "$j"
check "cost: GPUs per MW at 700 W" jqt '(.cost.gpus_per_mw_nameplate - 1e6/700) | fabs < 1e-6' "$j"

"$bin" analyze "$src/data/examples/trace" --budget-w 2400 --json --price-per-kwh 0.2 \
  --kg-co2-per-kwh 0.5 --oversub-window-s 10 --oversub-tolerance 0.2 --curve-windows 1,10 \
  --curve-tolerance 0.1 > "$out/flags.json"; rc=$?
f="$out/flags.json"
check "flags exit 0 (got $rc)" test $rc -eq 0
check "flags: price" jqt '.cost.price_per_kwh == 0.2 and .cost.kg_co2_per_kwh == 0.5' "$f"
check "flags: oversub window" jqt '.oversubscription.window_s == 10 and .oversubscription.tolerance == 0.2' "$f"
check "flags: curve grid" jqt '.windows_curve.windows_s == [1, 10] and .windows_curve.tolerance == 0.1' "$f"
check "flags: no nameplate -> ratio null" jqt '.oversubscription.ratio == null' "$f"
check "flags: tolerance lets windows above" jqt \
  '.oversubscription.windows_above <= (.oversubscription.windows * 0.2 | floor)' "$f"
check "existing shape kept" jqt '.node.windows | length == 4' "$f"

# Table: the new sections.
"$bin" analyze "$src/data/examples/trace" --budget-w 2400 > "$out/table2.txt"
check "table: curve" grep -q "^windows curve" "$out/table2.txt"
check "table: shortest window" grep -q "shortest window at which the budget holds, node: 5 s" \
  "$out/table2.txt"
check "table: oversubscription" grep -q "^oversubscription (node, 30 s windows" "$out/table2.txt"
check "table: cost" grep -q '^cost and carbon (node; \$0.08/kWh, 0.25 kg CO2/kWh)' "$out/table2.txt"

# A simulated trace with a job map: job series and the simulated label; nameplate from the
# GPU model in meta.json (A100 400 W).
"$bin" sim "$src/scenarios/grpo-7b-a100.yaml" --duration-s 120 --out "$out/sim" > /dev/null
"$bin" analyze "$out/sim" --budget-w 314.6 --scope job --json > "$out/sim.json"; rc=$?
s="$out/sim.json"
check "sim: exit 0 (got $rc)" test $rc -eq 0
check "sim: simulated" jqt '.simulated == true' "$s"
check "sim: one job" jqt '.jobs | length == 1 and .[0].job == "grpo-7b"' "$s"
check "sim: job curve judged" jqt \
  '.windows_curve.series[] | select(.kind == "job") | .points[0].violation_rate != null' "$s"
check "sim: nameplate from gpu model" jqt '.oversubscription.nameplate_w == 400' "$s"
"$bin" analyze "$out/sim" --budget-w 314.6 > "$out/sim.txt"
check "sim: table says simulated" grep -q "all figures simulated" "$out/sim.txt"

# dcgmi dmon output (power W, total energy mJ), samples 0.5 s apart (--dmon-period-s).
{
  printf '#Entity   POWER     TOTEC\nID\n'
  for k in 0 1 2 3 4 5 6 7; do
    printf 'GPU 0     %d     %d\nGPU 1     %d     %d\n' $((200 + k)) $((k * 100000)) 300 $((k * 150000))
    [ $k -eq 3 ] && printf '#Entity   POWER     TOTEC\nID\n'
  done
} > "$out/dmon.txt"
"$bin" analyze "$out/dmon.txt" --budget-w 1000 --dmon-period-s 0.5 --windows 1 --json \
  > "$out/dmon.json"
check "dmon: exit 0" test $? -eq 0
check "dmon: format" jqt '.format == "dcgmi dmon log"' "$out/dmon.json"
check "dmon: two GPUs, 3.5 s" jqt '(.gpus | length) == 2 and .node.duration_s == 3.5' \
  "$out/dmon.json"
check "dmon: energy from TOTEC (mJ)" jqt '.gpus[1].energy_j == 1050 and
  .gpus[1].energy_source == "counter"' "$out/dmon.json"

"$bin" analyze "$src/data/examples/nvsmi_8gpu.csv" --budget-w 5000 --json >"$out/file.json"
cat "$src/data/examples/nvsmi_8gpu.csv" | "$bin" analyze - --budget-w 5000 --json >"$out/stdin.json"
check "- reads standard input: the same node and GPUs as the file" bash -c \
  "diff <(jq -S '[.node, .gpus]' '$out/file.json') <(jq -S '[.node, .gpus]' '$out/stdin.json')"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "analyze_basic: all checks passed"

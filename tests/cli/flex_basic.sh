#!/usr/bin/env bash
# End-to-end: `flexwatt sweep` (measured CSV and simulated scenario, PFI of the public A100 rows,
# SVG) and `flexwatt allocate` (every method, SLA floors, gap closed, infeasible, bad input).
# Usage: bash flex_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

sweep="$src/data/a100_power_cap_sweep.csv"
check "sweep csv" "$bin" sweep --csv "$sweep" --json --svg "$out/s.svg" >"$out/s.json"
check "three jobs" jqt '.jobs | length == 3' "$out/s.json"
check "PFI of pt_mpt_13b_lg 1.40" \
  jqt '.jobs[] | select(.job == "pt_mpt_13b_lg") | (.pfi - 1.403 | fabs) < 0.01' "$out/s.json"
check "uncapped term left out" jqt '[.jobs[] | .rows[-1].pfi_term == null] | all' "$out/s.json"
check "svg written" grep -q "<svg" "$out/s.svg"
check "sweep scenario" "$bin" sweep --scenario "$src/scenarios/finetune-moe-h200x8.yaml" \
  --steady --measure-s 120 --json >"$out/sim.json"
check "simulated MoE FT PFI within 15 % of 2.1" \
  jqt '.jobs[0] | .simulated and ((.pfi - 2.1) | fabs) <= 0.15 * 2.1' "$out/sim.json"
# Published per-class medians on H200 (docs/sources.md §1b): dense 1.27, MoE PT 1.43.
"$bin" sweep --scenario "$src/scenarios/pretrain-moe-h200x8.yaml" --steady --measure-s 120 \
  --json >"$out/moe.json"
check "simulated MoE PT PFI within 15 % of 1.43" \
  jqt '.jobs[0] | ((.pfi - 1.43) | fabs) <= 0.15 * 1.43' "$out/moe.json"
"$bin" sweep --scenario "$src/scenarios/flex/dense-pt-h200x8.yaml" --steady --measure-s 120 \
  --json >"$out/dense.json"
check "simulated dense PT PFI within 15 % of 1.27" \
  jqt '.jobs[0] | ((.pfi - 1.27) | fabs) <= 0.15 * 1.27' "$out/dense.json"

demo="$src/scenarios/flex/allocate-demo.yaml"
check "allocate" "$bin" allocate "$demo" --json >"$out/a.json"
check "study runs" "$bin" allocate --study --populations 4 --jobs 10 --pool 20 --json \
  >"$out/study.json"
check "study: optimal closes the whole gap" \
  jqt '[.cuts[] | select(.cut > 0) | .methods.optimal.gap_closed] | all(. == 1)' "$out/study.json"
check "six methods" jqt '.methods | length == 6' "$out/a.json"
check "all within target" jqt '.target_w as $t | [.methods[] | .total_power_w <= $t + 1e-6] | all' \
  "$out/a.json"
check "optimal not beaten" \
  jqt '(.methods[] | select(.method == "optimal") | .total_throughput) as $o |
       [.methods[] | .total_throughput <= $o + 1e-9] | all' "$out/a.json"
check "SLA respected" jqt '[.methods[].jobs[] | .slowdown] | max <= 0.5 + 1e-9' "$out/a.json"
check "flex 0 untouched" \
  jqt '[.methods[].jobs[] | select(.name == "dense-pt-h200-flex0") | .slowdown] | max < 1e-9' \
  "$out/a.json"
check "deep cut infeasible (still exit 0)" "$bin" allocate "$demo" --cut 0.6 --json \
  >"$out/inf.json" 2>/dev/null
check "reported infeasible" jqt '[.methods[] | .feasible == false] | all' "$out/inf.json"

check "pfi train" "$bin" pfi train --jobs 300 --out "$out/m.json" --json >"$out/train.json"
check "pfi LOO R² >= 0.6 (simulated)" jqt '.loo_r2 >= 0.6' "$out/train.json"
check "trace for predict" "$bin" sim "$src/scenarios/finetune-moe-h200x8.yaml" --duration-s 60 \
  --out "$out/ft-trace" >/dev/null
check "pfi predict" "$bin" pfi predict "$out/ft-trace" --model "$out/m.json" --json \
  >"$out/pred.json"
check "predicted MoE FT PFI above 1.5" jqt '.predicted_pfi > 1.5' "$out/pred.json"
expect_exit2 "pfi bad model" "not a JSON model" pfi predict "$out/ft-trace" --model "$out/s.svg"

check "demand response runs" "$bin" allocate --dr "$src/scenarios/flex/dr-fleet-h200.yaml" \
  --json >"$out/dr.json"
check "dr: caps lower the draw (uncapped adheres less than every method)" \
  jqt '(.methods[0].adherence_30s) as $u | [.methods[1:][] | .adherence_30s > $u] | all' \
  "$out/dr.json"
check "dr: optimal retains more throughput than equal" \
  jqt '([.methods[] | select(.method == "optimal")][0].throughput_retained) >
       ([.methods[] | select(.method == "equal")][0].throughput_retained)' "$out/dr.json"

expect_exit2 "sweep needs an input" "exactly one" sweep
expect_exit2 "allocate unknown method" "unknown method" allocate "$demo" --method best
printf 'cut: 0.3\njobs:\n  - name: a\n    pmax_w: 100\n    tmax: -1\n    pfi: 1.2\n' >"$out/bad.yaml"
expect_exit2 "allocate bad field" "bad.yaml:5" allocate "$out/bad.yaml"
printf 'cut: 0.3\njobs:\n  - name: a\n    pmaxw: 100\n' >"$out/typo.yaml"
expect_exit2 "allocate unknown key" "pmaxw" allocate "$out/typo.yaml"
finish flex_basic

#!/usr/bin/env bash
# End-to-end: `flexwatt fit` on the public A100 cap sweep (all three jobs within ±0.03 and PFI
# within ±5 %), on a trace made by `flexwatt sim` (--check), and bad input (exit 2).
# Usage: bash fit_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

sweep="$src/data/a100_power_cap_sweep.csv"
check "sweep fit runs" "$bin" fit "$sweep" --gpu a100-sxm4-80gb --json >"$out/sweep.json"
check "three jobs" jqt '.fits | length == 3' "$out/sweep.json"
check "residuals within 0.03" jqt '[.fits[] | .max_dp <= 0.03 and .max_dt <= 0.03] | all' \
  "$out/sweep.json"
check "PFI within 5 %" \
  jqt '[.fits[] | ((.pfi_sim - .pfi_meas) | fabs) <= 0.05 * .pfi_meas] | all' "$out/sweep.json"
check "power at or below the cap" jqt '[.fits[] | .power_at_or_below_cap] | all' "$out/sweep.json"
check "sweep fit writes a scenario" "$bin" fit "$sweep" --job pt_mpt_13b_lg --out "$out/pt.yaml"
check "fitted scenario runs" "$bin" sim "$out/pt.yaml" --duration-s 30 --out "$out/pt-trace"

check "source trace" "$bin" sim "$src/scenarios/pretrain-dense-h100x8.yaml" --duration-s 600 \
  --out "$out/trace" >/dev/null
check "trace fit --check" "$bin" fit "$out/trace" --gpu h100-sxm5 --check --json \
  --out "$out/fit.yaml" >"$out/trace.json"
check "low phases found" jqt '.low_phases >= 5' "$out/trace.json"
check "mean within 3 %" \
  jqt '.check.mean_w as $m | (($m[1] - $m[0]) | fabs) <= 0.03 * $m[0]' "$out/trace.json"
check "fitted trace scenario runs" "$bin" sim "$out/fit.yaml" --duration-s 30 --out "$out/t2"

expect_exit2 "no input" "input" fit
expect_exit2 "missing file" "nope" fit "$out/nope.csv"
expect_exit2 "unknown gpu" "--gpu: unknown 'x100'" fit "$sweep" --gpu x100
expect_exit2 "unknown job" "no job 'x'" fit "$sweep" --job x
printf 'job,cap_w,power_w,throughput\na,300,abc,1\na,400,350,1\n' >"$out/bad.csv"
expect_exit2 "bad cell" "bad.csv:2: power" fit "$out/bad.csv"
mkfifo "$out/pipe"
(timeout 10 cat "$sweep" > "$out/pipe" &)
err=$(timeout 10 "$bin" fit "$out/pipe" 2>&1 >/dev/null); rc=$?  # bounded: a reader may block
check "a pipe: exit 2, read twice" bash -c \
  "[ $rc -eq 2 ] && grep -q 'pipe: not a regular file: fit reads its input twice' <<<'$err'"
timeout 10 cat "$out/pipe" > /dev/null || true  # let the writer finish
finish fit_basic

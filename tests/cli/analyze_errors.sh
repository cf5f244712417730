#!/usr/bin/env bash
# End-to-end: `flexwatt analyze` on bad usage and bad input exits 2 with file:line messages.
# Usage: bash analyze_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
expect_fail() { expect_exit2 "$1" "$2" analyze "${@:3}"; }
ex="$src/data/examples/trace"
expect_fail "budget 0" "--budget-w: must be a positive" "$ex" --budget-w 0
expect_fail "budget negative" "--budget-w: must be a positive" "$ex" --budget-w=-5
expect_fail "budget missing" "budget-w" "$ex"
expect_fail "bad scope" "--scope: expected gpu, node or job" "$ex" --budget-w 100 --scope rack
expect_fail "scope job without map" "--scope job: the trace has no job->GPU map" "$ex" \
  --budget-w 100 --scope job
expect_fail "bad curve windows" "--curve-windows: not a number" "$ex" --budget-w 100 \
  --curve-windows 1,y
expect_fail "zero curve window" "--curve-windows: each window must be > 0" "$ex" \
  --budget-w 100 --curve-windows 0,1
expect_fail "curve tolerance 1" "--curve-tolerance: must be in" "$ex" --budget-w 100 \
  --curve-tolerance 1
expect_fail "oversub window 0" "--oversub-window-s: must be > 0" "$ex" --budget-w 100 \
  --oversub-window-s 0
expect_fail "oversub tolerance" "--oversub-tolerance: must be in" "$ex" --budget-w 100 \
  --oversub-tolerance=-0.1
expect_fail "negative price" "--price-per-kwh: must be >= 0" "$ex" --budget-w 100 \
  --price-per-kwh=-1
expect_fail "negative carbon" "--kg-co2-per-kwh: must be >= 0" "$ex" --budget-w 100 \
  --kg-co2-per-kwh=-1
mkdir -p "$out/badjobs" && cp "$ex/gpus.csv" "$out/badjobs/"
printf '{"jobs": [{"name": "a", "gpus": "zero"}]}' > "$out/badjobs/meta.json"
expect_fail "bad job map" "meta.json: jobs\\[0\\]: gpus" "$out/badjobs" --budget-w 100
expect_fail "bad windows" "--windows: not a number" "$ex" --budget-w 100 --windows 1,x
expect_fail "zero window" "--windows: each window must be > 0" "$ex" --budget-w 100 --windows 0
expect_fail "missing trace" "no such file" "$out/nope" --budget-w 100

printf '' > "$out/empty.csv"
expect_fail "empty file" "empty.csv:1: empty file" "$out/empty.csv" --budget-w 100
printf 'a,b,c\n1,2,3\n' > "$out/hdr.csv"
expect_fail "wrong header" "hdr.csv:1: header" "$out/hdr.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,100\n0.5,0,lots\n' > "$out/nn.csv"
expect_fail "non-numeric" "nn.csv:3: power_w: not a number" "$out/nn.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,-1\n' > "$out/neg.csv"
expect_fail "negative power" "neg.csv:2: power_w: negative" "$out/neg.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,nan\n' > "$out/nan.csv"
expect_fail "NaN power" "nan.csv:2: power_w: NaN" "$out/nan.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,1\n1,0,1\n0.5,0,1\n' > "$out/back.csv"
expect_fail "time backwards" "back.csv:4: time_s: goes backwards for GPU 0" "$out/back.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,1\n0,9,1\n' > "$out/unk.csv"
expect_fail "unknown gpu" "unk.csv:3: gpu: unknown GPU index 9" "$out/unk.csv" --budget-w 100 --gpus 0,1

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "analyze_errors: all checks passed"

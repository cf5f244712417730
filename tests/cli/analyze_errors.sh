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
# No --budget-w is no longer an error: the summary and proposed budgets (analyze_propose.sh).
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
expect_fail "negative price" "--price-per-kwh: must be a finite number in \\[0, 1000\\]" "$ex" --budget-w 100 \
  --price-per-kwh=-1
expect_fail "negative carbon" "--kg-co2-per-kwh: must be a finite number in \\[0, 10\\]" "$ex" --budget-w 100 \
  --kg-co2-per-kwh=-1
mkdir -p "$out/badjobs" && cp "$ex/gpus.csv" "$out/badjobs/"
printf '{"jobs": [{"name": "a", "gpus": "zero"}]}' > "$out/badjobs/meta.json"
expect_fail "bad job map" "meta.json: jobs\\[0\\]: gpus" "$out/badjobs" --budget-w 100
expect_fail "bad windows" "--windows: not a number" "$ex" --budget-w 100 --windows 1,x
expect_fail "zero window" "--windows: each window must be > 0" "$ex" --budget-w 100 --windows 0
expect_fail "missing trace" "no such file" "$out/nope" --budget-w 100

printf '' > "$out/empty.csv"
expect_fail "empty file" "empty.csv:1: empty file" "$out/empty.csv" --budget-w 100
printf '#Entity POWER\nID\nGPU 0 100\nGPU 0 101\n' > "$out/dmon.txt"
expect_fail "dmon without a period" \
  "dmon.txt:1: header: dcgmi dmon output has no timestamps: give --dmon-period-s" \
  "$out/dmon.txt" --budget-w 100
expect_fail "dmon period 0" "--dmon-period-s: must be in" "$out/dmon.txt" --budget-w 100 \
  --dmon-period-s 0
printf '#Entity POWER\nID\nGPU 0 x\n' > "$out/dmon_bad.txt"
expect_fail "dmon bad power" "dmon_bad.txt:3: POWER" "$out/dmon_bad.txt" --budget-w 100 \
  --dmon-period-s 1
expect_fail "dmon period nan" "--dmon-period-s: must be in" "$out/dmon.txt" --budget-w 100 \
  --dmon-period-s nan
expect_fail "parse threads 3" "--parse-threads" "$ex" --budget-w 100 --parse-threads 3
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

# Issue 13 regressions: never silently wrong, no hangs, no aborts.
nv="$src/data/examples/nvsmi_8gpu.csv"
{ head -1 "$nv"; tail -n +3 "$nv"; } > "$out/trim1.csv"   # one row trimmed from the top
check "trimmed nvidia-smi log keeps 8 GPUs" bash -c \
  "'$bin' analyze '$out/trim1.csv' --budget-w 5000 --json | jq -e '(.gpus|length)==8 and .duplicates==0' >/dev/null"
expect_fail "nvsmi-gpus 16" "--nvsmi-gpus 16: .*shows 8 rows per query loop" "$nv" --budget-w 5000 \
  --nvsmi-gpus 16
expect_fail "nvsmi-gpus 5000" "--nvsmi-gpus: must be" "$nv" --budget-w 5000 --nvsmi-gpus 5000
{ head -1 "$nv"; sed -n '2,601p' "$nv"; sed -n '602,$p' "$nv" | awk 'NR % 8 != 0'; } > "$out/stop.csv"
expect_fail "a GPU stops reporting" "cannot be told apart|query-loop cycle changed" \
  "$out/stop.csv" --budget-w 5000
printf 'timestamp, index, power.draw [W]\n2025/07/26 23:32:09.703, 0, 315.5 W\n2025/07/26 23:32:09.803, 0, 31\n2025/07/26 23:32:09.903, 0, 315 W\n' > "$out/cut.csv"
expect_fail "unitless cell among unit cells" "cut.csv:3: power.draw: cell missing its unit" \
  "$out/cut.csv" --budget-w 500
printf 'timestamp, index, power.draw [W]\n2025/07/26 23:32:09.703, 0, 0.3 kW\n2025/07/26 23:32:09.803, 0, 300000 mW\n' > "$out/kw.csv"
check "kW and mW cells" bash -c \
  "'$bin' analyze '$out/kw.csv' --budget-w 500 --json | jq -e '.gpus[0].peak_power_w==300' >/dev/null"
printf 'time_s,gpu,power_w\n0,0,1\n1e20,0,1\n' > "$out/huge.csv"
expect_fail "timestamp 1e20" "huge.csv:3: time_s: .*sane range" "$out/huge.csv" --budget-w 100
expect_fail "window below the sample period" "--windows: window 1e-06 s is shorter than the sample period" \
  "$ex" --budget-w 100 --windows 1e-6
expect_fail "curve window below the period" "--curve-windows: window 1e-07 s is shorter" \
  "$ex" --budget-w 100 --curve-windows 1e-7
expect_fail "oversub window below the period" "--oversub-window-s: window 1e-07 s is shorter" \
  "$ex" --budget-w 100 --oversub-window-s 1e-7
expect_fail "nameplate nan" "--nameplate-w: must be 1..5000 W" "$ex" --budget-w 100 --nameplate-w nan
expect_fail "nameplate 1e-300" "--nameplate-w: must be 1..5000 W of one GPU .got 1e-300" "$ex" --budget-w 100 \
  --nameplate-w 1e-300
expect_fail "windows listed twice" "--windows: 10 s is listed twice" "$ex" --budget-w 100 \
  --windows 10,30,10
expect_fail "price 1e308" "--price-per-kwh: must be a finite number in \[0, 1000\]" "$ex" \
  --budget-w 100 --price-per-kwh 1e308
expect_fail "windows inf" "--windows: each window must be > 0" "$ex" --budget-w 100 --windows inf
mkdir -p "$out/jobs7" && cp "$ex/gpus.csv" "$out/jobs7/"
printf '{"jobs": [{"name": "a", "gpus": [7]}]}' > "$out/jobs7/meta.json"
expect_fail "job on a GPU not in the trace" "job 'a': GPU 7 is not in the trace" "$out/jobs7" --budget-w 100
printf '{"jobs": [{"name": "a", "gpus": [0,1]}, {"name": "b", "gpus": [1,2]}]}' > "$out/jobs7/meta.json"
expect_fail "GPU in two jobs" "job 'b': GPU 1 is also in job 'a'" "$out/jobs7" --budget-w 100
printf '[1,2]' > "$out/jobs7/meta.json"
expect_fail "meta.json array" "meta.json: expected a JSON object" "$out/jobs7" --budget-w 100
for bad in '-5' '"700"'; do
  printf '{"nameplate_w": %s}' "$bad" > "$out/jobs7/meta.json"
  expect_fail "meta.json nameplate $bad" "meta.json: nameplate_w: expected a positive number" \
    "$out/jobs7" --budget-w 100
done
{ printf '\xEF\xBB\xBF'; head -9 "$ex/gpus.csv" | tr -d '\r' | sed 's/$/\r/'; head -1 "$ex/gpus.csv";
  sed -n '10,17p' "$ex/gpus.csv"; printf '4.5,0,31'; } > "$out/asis.csv"
check "BOM, CRLF, repeated header, partial last line: warnings" bash -c \
  "'$bin' analyze '$out/asis.csv' --budget-w 5000 --json 2>/dev/null | jq -e '.warning_count==2 and (.warnings[0]|test(\"asis.csv:10: repeated header\")) and (.warnings[1]|test(\"asis.csv:19: partial last line\"))' >/dev/null"
gzip -c "$ex/gpus.csv" > "$out/trace.csv.gz"
expect_fail "gzip-compressed" "trace.csv.gz:1: header: the file is gzip-compressed; decompress it first \\(zcat" \
  "$out/trace.csv.gz" --budget-w 100
printf 'a\001b,c\n1,2\n' > "$out/binary.csv"
expect_fail "bytes outside ASCII shown as ?" "got 'a\\?b,c'" "$out/binary.csv" --budget-w 100
printf 'time_s,gpu,power_w\n0,0,100\n0,1,100\n0.2,0,100\n0.1,1,100\n0.3,0,100\n' > "$out/unsorted.csv"
check "unsorted rows in a file: sorted in memory" bash -c \
  "'$bin' analyze '$out/unsorted.csv' --budget-w 400 --json | jq -e '.unsorted_rows==1 and .rows==5' >/dev/null"
err=$("$bin" analyze /dev/stdin --budget-w 400 < <(cat "$out/unsorted.csv") 2>&1 >/dev/null); rc=$?
check "unsorted rows through a pipe: exit 2, file:line, save to a file" \
  bash -c "[ $rc -eq 2 ] && grep -q '/dev/stdin:5: time_s: rows out of time order.*save it to a file' <<<'$err'"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "analyze_errors: all checks passed"

#!/usr/bin/env bash
# shellcheck disable=SC2016  # awk and jq programs in single quotes
# End-to-end: `flexwatt analyze --stability` (issue #48): table and JSON fields on a site CSV, a
# flexwatt trace and an nvidia-smi log; limits exit 1; bad input exits 2 naming file and line.
# Usage: bash analyze_stability.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2 out=""
source "$(dirname "$0")/lib/common.sh"
command -v jq > /dev/null || need_tool jq
scratch_dir out
ex="$src/data/examples/trace"

# site CSV: 1000 W + A·sin(2π f t), sampled at 10 Hz for 120 s.
sine_csv() {  # FILE AMP_W FREQ_HZ
  awk -v a="$2" -v f="$3" 'BEGIN { print "time_s,power_w"; pi = atan2(0, -1);
    for (i = 0; i < 1200; i++) { t = i / 10; printf "%.1f,%.6f\n", t, 1000 + a * sin(2 * pi * f * t) } }' \
    > "$1"
}
sine_csv "$out/fast.csv" 100 0.5    # in the default band 0.1-5 Hz; samples hit its peaks
sine_csv "$out/slow.csv" 100 0.02   # below it

# --help, and analyze's own help points to it.
check "help exits 0" "$bin" analyze --stability --help > "$out/help.txt"
check "help names the limits" grep -q -- "--max-ramp-frac-per-s" "$out/help.txt"
check "help has an example" grep -q "Example" "$out/help.txt"
"$bin" analyze --help > "$out/ahelp.txt"
check "analyze --help mentions --stability" grep -q -- "--stability" "$out/ahelp.txt"

# Table: the sections, at most 120 columns.
check "table on a site CSV" "$bin" analyze --stability "$out/fast.csv" > "$out/fast.txt"
for s in "Ramps" "Swings" "Band energy" "site power"; do
  check "table shows $s" grep -q "$s" "$out/fast.txt"
done
check "table fits 120 columns" awk 'length($0) > 120 { exit 1 }' "$out/fast.txt"

# JSON: swing 2A over 1 s (half a period: peak to trough), ramp over 0.1 s near
# 2πfA·sinc²(0.05) ≈ 313 W/s and 0 over 10 s (whole periods), band ≈ 1, not clipped (Nyquist 5 Hz).
"$bin" analyze --stability "$out/fast.csv" --json > "$out/fast.json"
check "json series site" jqt '.series == "site" and .format == "site-csv"' "$out/fast.json"
check "json swing 2A" jqt '.swings[0].window_s == 1 and (.swings[0].max_w - 200 | fabs) < 0.01 and
  (.swings[0].p95_w - 200 | fabs) < 0.01' "$out/fast.json"
check "json ramp 0.1 s" jqt '.ramps[0].window_s == 0.1 and .ramps[0].max_up_w_per_s > 300 and
  .ramps[0].max_up_w_per_s < 320 and .ramps[0].max_up_pct_of_peak_per_s > 25' "$out/fast.json"
check "json ramp 10 s" jqt '.ramps[2].window_s == 10 and .ramps[2].max_up_w_per_s < 0.01' \
  "$out/fast.json"
check "json band in" jqt '.band.fraction > 0.99 and .band.clipped == false and .band.lo_hz == 0.1
  and .band.nyquist_hz == 5' "$out/fast.json"
check "json no limits" jqt '.limits == [] and .violated == false and .reference == null' \
  "$out/fast.json"
"$bin" analyze --stability "$out/slow.csv" --json > "$out/slow.json"
check "json band out" jqt '.band.fraction < 0.01' "$out/slow.json"
"$bin" analyze --stability "$out/fast.csv" --band 2,4 --json > "$out/band.json"
check "json --band excludes the sine" jqt '.band.fraction < 0.01 and .band.hi_hz == 4' \
  "$out/band.json"

# A flexwatt trace logged every 0.5 s: no 0.1 s ramp, the band clipped at Nyquist (1 Hz).
"$bin" analyze --stability "$ex" --json > "$out/trace.json"
check "trace node of 4 GPUs" jqt '.series == "node" and .gpus == 4 and .grid.period_s == 0.5' \
  "$out/trace.json"
check "trace 0.1 s ramp skipped" jqt '.ramps[0].skipped != null and .ramps[0].max_up_w_per_s == null
  and .ramps[1].max_up_w_per_s > 0' "$out/trace.json"
check "trace band clipped" jqt '.band.clipped and .band.effective_hi_hz == 1 and .band.nyquist_hz == 1
  and (.notes | map(test("Nyquist")) | any)' "$out/trace.json"
"$bin" analyze --stability "$ex" > "$out/trace.txt"
check "trace table says clipped" grep -q "clipped" "$out/trace.txt"
"$bin" analyze --stability "$src/data/examples/nvsmi_8gpu.csv" --json > "$out/nvsmi.json"
check "nvidia-smi node" jqt '(.format | test("nvidia-smi")) and .gpus == 8 and .samples > 100' \
  "$out/nvsmi.json"

# Reference: the same trace at +5 % power, the same tokens in the same time.
mkdir -p "$out/plus5"
cp "$ex/jobs.csv" "$ex/meta.json" "$out/plus5/"
awk -F, 'BEGIN { OFS = "," } NR == 1 { print; next } { $3 = sprintf("%.6f", $3 * 1.05); print }' \
  "$ex/gpus.csv" > "$out/plus5/gpus.csv"
"$bin" analyze --stability "$out/plus5" --reference "$ex" --json > "$out/ref.json"
check "energy overhead 5 %" jqt '(.reference.energy_overhead_pct - 5 | fabs) < 0.01' "$out/ref.json"
check "throughput loss 0" jqt '(.reference.throughput_loss_pct | fabs) < 1e-9 and
  .reference.throughput_note == null' "$out/ref.json"
"$bin" analyze --stability "$out/plus5" --reference "$ex" > "$out/ref.txt"
check "table energy overhead" grep -q "energy overhead 5.00 %" "$out/ref.txt"
"$bin" analyze --stability "$out/fast.csv" --reference "$out/slow.csv" --json > "$out/ref2.json"
check "throughput unknown without tokens" jqt '.reference.throughput_loss_pct == null and
  (.reference.throughput_note | test("unknown"))' "$out/ref2.json"

# Limits: exit 1 when violated (report still printed), 0 when held.
expect_rc() {  # NAME WANT ARGS...
  local name=$1 want=$2 rc; shift 2
  "$bin" analyze --stability "$@" > "$out/rc.out" 2> "$out/rc.err"; rc=$?
  if [ $rc -ne "$want" ]; then echo "FAIL: $name: exit $rc, want $want"; fails=$((fails + 1)); fi
}
expect_rc "ramp W/s violated" 1 "$out/fast.csv" --max-ramp-w-per-s 100 --limit-window-s 0.1
check "violation named on stderr" grep -q "limit violated: max_ramp_w_per_s" "$out/rc.err"
check "report printed on violation" grep -q "VIOLATED" "$out/rc.out"
expect_rc "ramp W/s held" 0 "$out/fast.csv" --max-ramp-w-per-s 1000 --limit-window-s 0.1
expect_rc "ramp fraction violated" 1 "$out/fast.csv" --max-ramp-frac-per-s 0.1 --limit-window-s 0.1
expect_rc "ramp fraction held" 0 "$out/slow.csv" --max-ramp-frac-per-s 0.1
expect_rc "band violated" 1 "$out/fast.csv" --max-band-frac 0.5
expect_rc "band held" 0 "$out/slow.csv" --max-band-frac 0.5
"$bin" analyze --stability "$out/fast.csv" --max-band-frac 0.5 --json > "$out/lim.json" 2> /dev/null
check "json limits" jqt '.violated and .limits[0].name == "max_band_frac" and .limits[0].violated' \
  "$out/lim.json"

# Bad input: exit 2 naming file, line and field; flags named.
expect_fail() { expect_exit2 "$1" "$2" analyze --stability "${@:3}"; }
printf 'time_s,power_w\n0,100\n0.1,lots\n' > "$out/bad.csv"
expect_fail "bad power" "bad.csv:3: power_w: not a number" "$out/bad.csv"
printf 'time_s,power_w\n0,100\n0,101\n' > "$out/dup.csv"
expect_fail "time not increasing" "dup.csv:3: time_s: not after" "$out/dup.csv"
printf 'time_s,gpu,power_w\n0,0,100\n0.5,0,x\n' > "$out/badgpu.csv"
expect_fail "bad gpus.csv" "badgpu.csv:3: power_w" "$out/badgpu.csv"
expect_fail "missing file" "no such file" "$out/nope.csv"
expect_fail "bad reference" "--reference: .*bad.csv:3: power_w" "$out/fast.csv" --reference "$out/bad.csv"
expect_fail "band order" "--band" "$out/fast.csv" --band 5,1
expect_fail "band one value" "--band" "$out/fast.csv" --band 5
expect_fail "zero ramp window" "--ramp-windows" "$out/fast.csv" --ramp-windows 0,1
expect_fail "negative limit" "--max-ramp-w-per-s" "$out/fast.csv" --max-ramp-w-per-s=-1
expect_fail "band frac above 1" "--max-band-frac" "$out/fast.csv" --max-band-frac 2
expect_fail "band above Nyquist" "cannot judge the band" "$ex" --band 2,5 --max-band-frac 0.1
expect_fail "ramp window too short" "cannot judge the ramp" "$ex" --max-ramp-w-per-s 10 \
  --limit-window-s 0.1
expect_fail "standard input" "standard input" -

finish analyze_stability

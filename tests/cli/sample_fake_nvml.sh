#!/usr/bin/env bash
# flexwatt sample against the fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml): a ~1 s run at
# 0.1 s with 2 GPUs, then the failure paths (no NVML, unknown GPU index, bad interval).
# Usage: sample_fake_nvml.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
build=$(dirname "$bin")
fake=$build/tests/telemetry/fake_nvml/libnvidia-ml.so.1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }

cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
name 0 Fake GPU Zero
name 1 Fake GPU One
power 0 300
power 1 450.5
field_instant 1 no
field_average 0 yes
energy 1 none
SCRIPT

# 1. A ~1 s run at 0.1 s with both GPUs.
FAKE_NVML_SCRIPT=$tmp/script.txt FLEXWATT_NVML_LIBRARY=$fake \
  "$bin" sample --interval-s 0.1 --duration-s 1 --out "$tmp/trace" --gpus 0,1 --json \
  >"$tmp/report.json" 2>"$tmp/err.txt"
rc=$?
check "sample exits 0 (rc=$rc: $(cat "$tmp/err.txt"))" test "$rc" -eq 0
csv=$tmp/trace/gpus.csv
meta=$tmp/trace/meta.json
check "gpus.csv written" test -s "$csv"
check "meta.json written" test -s "$meta"
check "gpus.csv header" test "$(head -1 "$csv")" = \
  "time_s,gpu,power_w,energy_j,power_limit_w,sm_util,mem_util,sm_clock_mhz,temp_c"
samples=$(sed -n 's/.*"samples": *\([0-9]*\).*/\1/p' "$meta")
missed=$(sed -n 's/.*"missed_ticks": *\([0-9]*\).*/\1/p' "$meta")
rows=$(($(wc -l <"$csv") - 1))
check "meta has samples and missed_ticks ($samples, $missed)" test -n "$samples" -a -n "$missed"
# A loaded machine may miss ticks; every planned tick is either taken or counted as missed.
check "samples + missed = 10 ticks" test "$((samples + missed))" -eq 10
check "at least 5 samples taken ($samples)" test "$samples" -ge 5
check "one row per GPU per tick ($rows rows)" test "$rows" -eq "$((2 * samples))"
check "every row has 9 columns" test "$(awk -F, 'NR>1 && NF!=9' "$csv" | wc -l)" -eq 0
check "GPU column alternates 0,1" test "$(awk -F, 'NR>1 && $2!=(NR%2==0?0:1)' "$csv" | wc -l)" -eq 0
check "GPU 0 power from the script" test "$(awk -F, 'NR>1 && $2==0 && $3!="300.00"' "$csv" | wc -l)" -eq 0
check "GPU 1 power from the script" test "$(awk -F, 'NR>1 && $2==1 && $3!="450.50"' "$csv" | wc -l)" -eq 0
check "time_s non-decreasing" test "$(awk -F, 'NR>2 && $1<prev {bad++} NR>1 {prev=$1} END {print bad+0}' "$csv")" -eq 0
check "utilisation converted to 0..1" test "$(awk -F, 'NR>1 && ($6<0 || $6>1)' "$csv" | wc -l)" -eq 0
check "meta: interval" grep -q '"interval_s": 0.1' "$meta"
check "meta: device names" grep -q '"name": "Fake GPU One"' "$meta"
check "meta: power sources" grep -q '"power_source": "nvmlDeviceGetPowerUsage"' "$meta"
check "meta: averaged field on GPU 0" grep -q '"power_source": "nvml_field_power_average"' "$meta"
check "meta: energy integrated on GPU 1" grep -q '"energy_source": "integrated"' "$meta"
check "meta: version" grep -q '"flexwatt_version"' "$meta"
check "meta: gpus" test "$(tr -d ' \n' <"$meta" | grep -o '"gpus":\[[0-9,]*\]')" = '"gpus":[0,1]'
check "json report" grep -q "\"samples\":$samples" "$tmp/report.json"

# 2. No NVML: one line on stderr, exit 2, nothing written.
FLEXWATT_NVML_LIBRARY=$tmp/nonexistent/libnvidia-ml.so.1 \
  "$bin" sample --interval-s 0.1 --duration-s 1 --out "$tmp/none" >"$tmp/out2.txt" 2>"$tmp/err2.txt"
rc=$?
check "no NVML: exit 2 (rc=$rc)" test "$rc" -eq 2
check "no NVML: one line on stderr" test "$(wc -l <"$tmp/err2.txt")" -eq 1
check "no NVML: names the library" grep -q "nonexistent/libnvidia-ml.so.1" "$tmp/err2.txt"
check "no NVML: no trace" test ! -e "$tmp/none"

# 3. Unknown GPU index: exit 2 naming the index and the count.
FAKE_NVML_SCRIPT=$tmp/script.txt FLEXWATT_NVML_LIBRARY=$fake \
  "$bin" sample --interval-s 0.1 --duration-s 0.2 --out "$tmp/bad" --gpus 0,7 2>"$tmp/err3.txt"
rc=$?
check "unknown GPU: exit 2 (rc=$rc)" test "$rc" -eq 2
check "unknown GPU: names index and count" grep -q "GPU index 7.*2 GPU" "$tmp/err3.txt"

# 4. Bad usage.
"$bin" sample --interval-s 0 --out "$tmp/bad2" 2>/dev/null
check "interval 0: exit 2" test $? -eq 2
"$bin" sample --gpus 0,x --out "$tmp/bad3" 2>/dev/null
check "bad --gpus: exit 2" test $? -eq 2

# 5. GPU lost mid-run: partial trace, error names the GPU, exit 1.
printf 'gpus 2\nlost 1 after_reads=3\n' >"$tmp/lost.txt"
FAKE_NVML_SCRIPT=$tmp/lost.txt FLEXWATT_NVML_LIBRARY=$fake \
  "$bin" sample --interval-s 0.05 --duration-s 1 --out "$tmp/lost" 2>"$tmp/err5.txt" >/dev/null
rc=$?
check "GPU lost: exit 1 (rc=$rc)" test "$rc" -eq 1
check "GPU lost: message names GPU 1" grep -q "(GPU 1).*NVML_ERROR_GPU_IS_LOST" "$tmp/err5.txt"
check "GPU lost: meta records the error" grep -q '"error"' "$tmp/lost/meta.json"

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"

#!/usr/bin/env bash
# scripts/nvml_probe.py (the read-only probe scripts/gpu_check.sh runs on a real GPU) against the
# fake libnvidia-ml.so.1 (tests/telemetry/fake_nvml): a periodic load on an h100 and an a100
# profile must be classified as the fake's profiles say (all MATCH, exit 0); an h100 whose
# PowerUsage is instantaneous (`average 0 instant`) must be reported as DIFFERS (exit 1); a
# steady load cannot be told apart (unclear, UNCHECKED, exit 0); no NVML: exit 2. ~10 s.
# Usage: gpu_check_fake.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
command -v python3 >/dev/null || need_tool python3
command -v jq >/dev/null || need_tool jq
fake=$(dirname "$bin")/tests/telemetry/fake_nvml/libnvidia-ml.so.1
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
probe=$src/scripts/nvml_probe.py

# probe NAME SCRIPT_LINES [ARGS...]: runs the probe (3 s per GPU) on a fake driven by the
# script; JSON in $tmp/NAME.json, the table in $tmp/NAME.txt, exit code in $rc.
probe() {
  local name=$1 script=$2; shift 2
  printf '%s\n' "$script" >"$tmp/$name.script"
  FAKE_NVML_SCRIPT=$tmp/$name.script FLEXWATT_NVML_LIBRARY=$fake \
    timeout 30 python3 "$probe" --duration-s 3 --json "$tmp/$name.json" "$@" \
    >"$tmp/$name.txt" 2>"$tmp/$name.err"
  rc=$?
}
# item NAME GPU ITEM: the comparison's result for ITEM of GPU in run NAME.
item() { jq -r --arg i "$3" ".gpus[$2].compare[] | select(.item == \$i) | .result" "$tmp/$1.json"; }
# reading NAME GPU READING FIELD: a reading's field (status, verdict, ...) in run NAME.
reading() { jq -r ".gpus[$2].readings.$3.$4" "$tmp/$1.json"; }

load='load * period_s=0.7 high_w=380 low_w=120 duty=0.6'

# 1. The documented models: an h100 and an a100 under a periodic load.
probe models "gpus 2
profile 0 h100
profile 1 a100
$load"
check "models: exit 0 (rc=$rc: $(cat "$tmp/models.err"))" test "$rc" -eq 0
check "models: two GPUs" test "$(jq '.gpus | length' "$tmp/models.json")" -eq 2
check "models: GPU 0 is an h100" test "$(jq -r '.gpus[0].model' "$tmp/models.json")" = h100
check "models: GPU 0 PowerUsage avg_1s" test "$(reading models 0 PowerUsage verdict)" = avg_1s
check "models: GPU 0 field 185 avg_1s" test "$(reading models 0 field_185 verdict)" = avg_1s
check "models: GPU 0 field 186 instant" test "$(reading models 0 field_186 verdict)" = instant
check "models: GPU 0 counter every ~20 ms" \
  jqt '.gpus[0].energy_counter.update_ms | . > 18 and . < 22' "$tmp/models.json"
check "models: GPU 1 is an a100" test "$(jq -r '.gpus[1].model' "$tmp/models.json")" = a100
check "models: GPU 1 PowerUsage instant" test "$(reading models 1 PowerUsage verdict)" = instant
check "models: GPU 1 field 185 not supported" \
  test "$(reading models 1 field_185 status)" = not_supported
check "models: GPU 1 field 186 instant" test "$(reading models 1 field_186 verdict)" = instant
check "models: GPU 1 counter every ~100 ms" \
  jqt '.gpus[1].energy_counter.update_ms | . > 90 and . < 110' "$tmp/models.json"
for g in 0 1; do
  check "models: GPU $g: 4 items compared" test "$(jq ".gpus[$g].compare | length" "$tmp/models.json")" -eq 4
  check "models: GPU $g: every item MATCH" \
    jqt ".gpus[$g].compare | all(.result == \"MATCH\")" "$tmp/models.json"
done
check "models: latencies measured" jqt '[.gpus[].readings[].latency_ms.median] | all(. >= 0)' \
  "$tmp/models.json"
check "models: table says MATCH" grep -q "PowerUsage .*fake avg_1s .*MATCH" "$tmp/models.txt"
check "models: table says 0 differ" grep -q "^0 item(s) DIFFER" "$tmp/models.txt"

# 2. An h100 whose PowerUsage (and field 185) is instantaneous: the comparison must fail. A
# 1 ms latency on PowerUsage shows in its measured latency.
probe differs "gpus 1
profile 0 h100
average 0 instant
latency nvmlDeviceGetPowerUsage 1
$load"
check "differs: exit 1 (rc=$rc: $(cat "$tmp/differs.err"))" test "$rc" -eq 1
check "differs: PowerUsage measured instant" test "$(reading differs 0 PowerUsage verdict)" = instant
check "differs: PowerUsage DIFFERS" test "$(item differs 0 PowerUsage)" = DIFFERS
check "differs: field 185 DIFFERS" test "$(item differs 0 field_185)" = DIFFERS
check "differs: field 186 MATCH" test "$(item differs 0 field_186)" = MATCH
check "differs: PowerUsage latency >= 1 ms" \
  jqt '.gpus[0].readings.PowerUsage.latency_ms.median >= 1' "$tmp/differs.json"
check "differs: table says DIFFERS" grep -q "PowerUsage .*DIFFERS" "$tmp/differs.txt"

# 3. A steady load: nothing to tell the readings apart by.
probe steady "gpus 1
profile 0 h100
load 0 period_s=1 high_w=300 low_w=300" --gpus 0
check "steady: exit 0 (rc=$rc)" test "$rc" -eq 0
check "steady: PowerUsage unclear" test "$(reading steady 0 PowerUsage verdict)" = unclear
check "steady: says so" grep -q "load too steady: run a training job or a periodic load" \
  "$tmp/steady.txt"
check "steady: PowerUsage UNCHECKED" test "$(item steady 0 PowerUsage)" = UNCHECKED

# 4. No NVML, a GPU index out of range: exit 2 with a message.
FLEXWATT_NVML_LIBRARY=$tmp/none/libnvidia-ml.so.1 python3 "$probe" >/dev/null 2>"$tmp/none.err"
rc=$?
check "no NVML: exit 2 (rc=$rc)" test "$rc" -eq 2
check "no NVML: names the library" grep -q "none/libnvidia-ml.so.1" "$tmp/none.err"
probe badgpu "gpus 1" --gpus 3
check "GPU 3 of 1: exit 2 (rc=$rc)" test "$rc" -eq 2
check "GPU 3 of 1: message" grep -q "no GPU index 3" "$tmp/badgpu.err"

finish gpu_check_fake

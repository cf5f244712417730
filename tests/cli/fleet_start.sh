#!/usr/bin/env bash
# End-to-end: `flexwatt sim --set fleet.start=…` resolves per-job phase offsets (recorded in
# meta.json), deterministic for a seed; a bad strategy exits 2 naming the field.
# Usage: bash fleet_start.sh FLEXWATT_BIN SOURCE_DIR
set -u
BIN="$1"; SRC="$2"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
S="$SRC/scenarios/fleet-16xa100.yaml"

offsets() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['job_start_offsets_s'])" "$1/meta.json"; }

"$BIN" sim "$S" --duration-s 30 --seed 3 --set fleet.start=aligned --out "$T/al" >/dev/null || fail "aligned run"
[ "$(offsets "$T/al")" = "[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]" ] || fail "aligned offsets $(offsets "$T/al")"
"$BIN" sim "$S" --duration-s 30 --seed 3 --set fleet.start=staggered --out "$T/st" >/dev/null || fail "staggered run"
python3 - "$T/st/meta.json" <<'PY' || fail "staggered offsets"
import json, sys
o = json.load(open(sys.argv[1]))["job_start_offsets_s"]
assert o[0] == 0 and o[1] > 0 and len(set(o)) == len(o), o   # 72B-a at 0, all distinct
PY
"$BIN" sim "$S" --duration-s 30 --seed 3 --set fleet.start=random --out "$T/r1" >/dev/null || fail "random run"
"$BIN" sim "$S" --duration-s 30 --seed 3 --set fleet.start=random --out "$T/r2" >/dev/null || fail "random run 2"
"$BIN" sim "$S" --duration-s 30 --seed 4 --set fleet.start=random --out "$T/r3" >/dev/null || fail "random run 3"
cmp -s "$T/r1/gpus.csv" "$T/r2/gpus.csv" || fail "random: one seed, two traces"
[ "$(offsets "$T/r1")" != "$(offsets "$T/r3")" ] || fail "random: seeds 3 and 4 gave the same offsets"
grep -q '"start": "random"' "$T/r1/meta.json" || fail "meta.json lacks the strategy"

"$BIN" sim "$S" --set fleet.start=diagonal --out "$T/bad" 2> "$T/bad.err"
rc=$?
[ $rc -eq 2 ] || fail "bad strategy: exit $rc, want 2"
grep -q -- "--set fleet.start=diagonal: fleet.start: 'diagonal' is not one of" "$T/bad.err" || fail "message: $(cat "$T/bad.err")"
echo ok

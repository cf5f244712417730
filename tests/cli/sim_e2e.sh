#!/usr/bin/env bash
# End-to-end: flexwatt sim is bit-for-bit deterministic for a seed, honours --set, and
# rejects a bad key with exit code 2 naming file:line: field.
# Usage: bash sim_e2e.sh FLEXWATT_BIN SOURCE_DIR
set -u
BIN="$1"; SRC="$2"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --duration-s 120 --seed 7 --out "$T/a" >/dev/null || fail "run a"
"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --duration-s 120 --seed 7 --out "$T/b" >/dev/null || fail "run b"
for f in gpus.csv jobs.csv meta.json; do cmp "$T/a/$f" "$T/b/$f" || fail "$f differs between runs with one seed"; done
"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --duration-s 120 --seed 8 --out "$T/c" >/dev/null || fail "run c"
cmp -s "$T/a/gpus.csv" "$T/c/gpus.csv" && fail "seeds 7 and 8 gave identical traces"
[ "$(wc -l < "$T/a/gpus.csv")" -eq 241 ] || fail "expected 240 samples + header"
grep -q '"seed": 7' "$T/a/meta.json" || fail "meta.json lacks the seed"
grep -q '"simulated": true' "$T/a/meta.json" || fail "meta.json lacks simulated"

# --set: a cap and a knob
"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --duration-s 60 --set gpus.0.power_cap_w=250 \
  --set jobs.0.group_size=4 --json --out "$T/d" > "$T/d.json" || fail "--set run"
grep -q '"mean_total_power_w"' "$T/d.json" || fail "--json summary"
awk -F, 'NR>1 && $5 != "250.0" {bad=1} END {exit bad}' "$T/d/gpus.csv" || fail "cap not applied"
awk -F, 'NR>1 && $7 != "4" {bad=1} END {exit bad}' "$T/d/jobs.csv" || fail "group size not applied"
grep -q 'jobs.0.group_size=4' "$T/d/meta.json" || fail "overrides not recorded"

# a bad key: exit 2 and a message naming the field
"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --set jobs.0.gruop_size=4 --out "$T/e" 2> "$T/e.err"
rc=$?
[ $rc -eq 2 ] || fail "bad key: exit $rc, want 2"
grep -q -- '--set jobs.0.gruop_size=4: jobs.0.gruop_size: unknown key' "$T/e.err" || fail "bad key message: $(cat "$T/e.err")"
# out of range
"$BIN" sim "$SRC/scenarios/grpo-7b-a100.yaml" --set gpus.0.power_cap_w=50 --out "$T/f" 2> "$T/f.err"
[ $? -eq 2 ] || fail "out-of-range cap should exit 2"
"$BIN" sim --help | grep -q "Example" || fail "--help lacks an example"
echo "sim e2e: ok"

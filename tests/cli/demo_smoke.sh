#!/usr/bin/env bash
# `flexwatt demo` (the README's main job) runs from the source directory, writes its report
# directory, labels its figures simulated, and rejects a missing policy with exit code 2.
# Usage: bash demo_smoke.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir tmp
cd "$src" || exit 1
out=$("$bin" demo --seeds 2 --duration-s 300 --out "$tmp/report" 2>&1); rc=$?
check "demo exits 0 (got $rc)" test $rc -eq 0
check "table says simulated" grep -q "SIMULATED" <<<"$out"
j="$tmp/report/report.json"
# Ours, as report.json computes it from the rows, printed on the line of the published figure.
ours=$(printf "%+.1f %%" "$(jq '.comparison.simulated.tokens_vs_static * 100' "$j")")
line=$(grep "tokens vs the reference" <<<"$out")
check "published figure on the reference line" grep -qF "+18.1 %" <<<"$line"
check "ours ($ours) on it, as report.json computes it" grep -qF -- "$ours" <<<"$line"
ppo=$(jq '[.controllers[] | select(.name == "ppo:policies/grpo-7b-a100.json")][0].progress.completed_step_tokens.mean' "$j")
ref=$(jq '.comparison.simulated.reference as $r | [.controllers[] | select(.name == $r)][0].progress.completed_step_tokens.mean' "$j")
check "tokens_vs_static is PPO over its reference row" jq -e --argjson p "$ppo" --argjson r "$ref" \
  '(.comparison.simulated.tokens_vs_static - ($p / $r - 1)) | fabs < 1e-9' "$j" >/dev/null
for f in report.json summary.csv power.svg; do
  check "report has $f" test -s "$tmp/report/$f"
done
check "ten controllers" test "$(jq ".controllers | length" "$j")" -eq 10
check "ppo present" jq -e '[.controllers[].name] | any(startswith("ppo:"))' "$j" >/dev/null
check "comparison keys" jq -e '.comparison.simulated | has("tokens_vs_static")' "$j" >/dev/null
check "static-cap compared" jq -e '.comparison.simulated | has("tokens_vs_static_cap")' "$j" >/dev/null
check "knob-only policy compared" jq -e '.comparison.simulated.knobs_policy | has("tokens_vs_static")' "$j" >/dev/null
check "csv has 11 lines" test "$(wc -l <"$tmp/report/summary.csv")" -eq 11
check "svg has ten panels" test "$(grep -c '<polyline fill="none" stroke="#1f5fbf"' "$tmp/report/power.svg")" -eq 10
out=$("$bin" demo --seeds 1 --duration-s 120 --knobs-policy none --out "$tmp/r3" 2>&1); rc=$?
check "--knobs-policy none exits 0 (got $rc)" test $rc -eq 0
check "--knobs-policy none: eight controllers" test "$(jq ".controllers | length" "$tmp/r3/report.json")" -eq 8
"$bin" demo --policy "$tmp/nope.json" --out "$tmp/r2" >/dev/null 2>"$tmp/err"; rc=$?
check "missing policy exits 2 (got $rc)" test $rc -eq 2
check "missing policy named" grep -q "nope.json" "$tmp/err"
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "demo_smoke: all checks passed"

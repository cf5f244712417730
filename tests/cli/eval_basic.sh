#!/usr/bin/env bash
# End-to-end: `flexwatt eval` on a short simulated episode, 2 seeds: table, JSON shape,
# traces kept with --out, determinism across --threads.
# Usage: bash eval_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
scn="$src/scenarios/grpo-7b-a100.yaml"
ctl="uncontrolled,static,threshold,pid:kp=0.5,ki=0.01,zeus,oracle"

"$bin" eval --help > "$out/help.txt"; rc=$?
check "--help exits 0" test $rc -eq 0
check "--help shows an example" grep -q "Example" "$out/help.txt"

"$bin" eval --list > "$out/list.txt"; rc=$?
check "--list exits 0" test $rc -eq 0
for c in uncontrolled static threshold pid zeus lookahead oracle; do
  check "--list names $c" grep -qE "^$c" "$out/list.txt"
done
check "--list shows pid options" grep -q "kp=" "$out/list.txt"
check "--list shows ranges" grep -q "kp=0.3 .*; range \[0, 1000\]" "$out/list.txt"
"$bin" eval --list --json > "$out/list.json"
check "--list --json declares kp's range" \
  jq -e '.[] | select(.name == "pid") | .options[] | select(.name == "kp") | .min == 0 and .max == 1000' \
  "$out/list.json" >/dev/null

"$bin" eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 240 > "$out/table.txt"; rc=$?
check "table exits 0" test $rc -eq 0
check "table says simulated" grep -q "SIMULATED" "$out/table.txt"
check "table header" grep -q "viol win %" "$out/table.txt"
check "table names its reference" grep -q "reference (tok/ref, tpm/ref): static" "$out/table.txt"
for c in uncontrolled static threshold "pid:kp=0.5,ki=0.01" zeus oracle; do
  check "table row $c" grep -qF "$c " "$out/table.txt"
done

"$bin" eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 240 --json --out "$out/traces" \
  > "$out/a.json"; rc=$?
check "json exits 0" test $rc -eq 0
for k in '"scenario"' '"seeds"' '"controllers"' '"tokens"' '"energy_j"' '"tokens_per_mwh"' \
         '"violation_rate"' '"0.5"' '"30"' '"300"' '"vs_reference"' '"vs_lookahead"' \
         '"violation_rate_offsets"' '"completed_step_tokens"' '"steps_violating"' \
         '"violation_rate_30"' '"limiter_interventions"' '"mean"' '"ci95"'; do
  check "json has $k" grep -q "$k" "$out/a.json"
done
check "trace kept per controller and seed" test -s "$out/traces/oracle/seed-2/gpus.csv"
check "trace meta names the controller" grep -q '"controller": "zeus"' "$out/traces/zeus/seed-1/meta.json"
check "trace meta says simulated" grep -q '"simulated": true' "$out/traces/static/seed-1/meta.json"

# Same seeds, one thread: identical numbers.
"$bin" eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 240 --json --threads 1 \
  > "$out/b.json"; rc=$?
check "one thread exits 0" test $rc -eq 0
check "deterministic across threads" cmp -s "$out/a.json" "$out/b.json"

# --json-out: the table on stdout and the same JSON in the file, from one run.
"$bin" eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 240 --json-out "$out/c.json" \
  > "$out/c.txt"; rc=$?
check "--json-out exits 0" test $rc -eq 0
check "--json-out prints the table" grep -q "viol win %" "$out/c.txt"
check "--json-out writes the same JSON as --json" cmp -s "$out/a.json" "$out/c.json"
"$bin" eval "$scn" --controllers uncontrolled --seeds 1 --duration-s 60 \
  --json-out /nonexistent-dir-fw/x.json > /dev/null 2>"$out/err.txt"; rc=$?
check "--json-out to a missing directory exits 1 before running" test $rc -eq 1
check "--json-out error names the file" grep -q "/nonexistent-dir-fw/x.json" "$out/err.txt"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "eval_basic: all checks passed"

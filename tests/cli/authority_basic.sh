#!/usr/bin/env bash
# End-to-end: `flexwatt authority` on the 7B scenario, short runs (exit 0, JSON shape, the
# direction of the concurrency effect, the table, the "simulated" label).
# Usage: bash authority_basic.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

"$bin" authority --help > "$out/help.txt"; rc=$?
check "--help exits 0" test $rc -eq 0
check "--help shows an example" grep -q "Example" "$out/help.txt"

sc="$src/scenarios/grpo-7b-a100.yaml"
"$bin" authority "$sc" --duration-s 300 --points 3 --json > "$out/a.json"; rc=$?
check "json exits 0" test $rc -eq 0
j="$out/a.json"
check "simulated" jqt '.simulated == true' "$j"
check "job" jqt '.job == "grpo-7b" and .job_gpus == 1' "$j"
check "two knobs" jqt '.knobs | length == 2' "$j"
check "ranked by mean swing" jqt \
  '.knobs[0].rank == 1 and .knobs[1].rank == 2 and .knobs[0].mean_power_swing >= .knobs[1].mean_power_swing' "$j"
for key in knob rank has_authority mean_power_swing peak_window_swing peak_sample_swing \
           throughput_ratio settings; do
  check "knob has $key" jqt ".knobs[0] | has(\"$key\")" "$j"
done
for key in value mean_power_w peak_window_w peak_sample_w tokens_per_s; do
  check "setting has $key" jqt ".knobs[0].settings[0] | has(\"$key\")" "$j"
done
check "3 settings each" jqt '[.knobs[].settings | length] == [3, 3]' "$j"
check "concurrency: power rises with the knob" jqt \
  '.knobs[] | select(.knob == "gen_concurrency") | .settings | (last.mean_power_w > first.mean_power_w)' "$j"
check "authority = swing >= threshold" jqt \
  'all(.knobs[]; .has_authority == (.mean_power_swing >= 0.1))' "$j"

# One knob, by name; job by name; threshold.
"$bin" authority "$sc" --duration-s 120 --points 2 --knob gen_concurrency --job grpo-7b \
  --threshold 0.99 --json > "$out/b.json"; rc=$?
check "one knob exits 0" test $rc -eq 0
check "one knob" jqt '.knobs | length == 1 and .[0].knob == "gen_concurrency"' "$out/b.json"
check "threshold 0.99: no authority" jqt '.knobs[0].has_authority == false' "$out/b.json"

# Deterministic.
"$bin" authority "$sc" --duration-s 120 --points 2 --knob gen_concurrency --job grpo-7b \
  --threshold 0.99 --json > "$out/c.json"
check "same seed, same output" cmp -s "$out/b.json" "$out/c.json"

# Table.
"$bin" authority "$sc" --duration-s 120 --points 2 > "$out/t.txt"; rc=$?
check "table exits 0" test $rc -eq 0
check "table says simulated" grep -q "flexwatt authority (simulated)" "$out/t.txt"
check "table ranks" grep -qE "^ +1 (gen_concurrency|group_size) " "$out/t.txt"

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "authority_basic: all checks passed"

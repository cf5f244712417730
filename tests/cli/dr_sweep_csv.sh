#!/usr/bin/env bash
# End-to-end: the per-job cap sweep CSVs that `dr replay`, `sweep` and `fit` read (issue 45
# item 6). A cap given twice for one job exits 2 naming the file, the line, the field (cap) and
# the earlier line; a file holding no rows for the job asked for exits 2 naming that job and the
# file, whatever another job's rows hold.
# Usage: bash dr_sweep_csv.sh FLEXWATT_BIN SOURCE_DIR
# shellcheck disable=SC2154  # $out is set by scratch_dir (lib/common.sh)
set -u
bin=$1
# shellcheck source=lib/common.sh
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

printf 'job,cap_w,power_w,throughput\nft,100,99,0.3\nft,200,190,0.8\nft,200,195,0.82\nft,300,280,1\n' \
  >"$out/dup.csv"
printf 'job,cap_w,power_w,throughput\nother,300,280,1\n' >"$out/one.csv"
for c in dup one; do
  cat >"$out/$c.yaml" <<YAML
sample_period_s: 0.5
duration_s: 600
baseline_w: measured
jobs:
  - {name: a, gpus: 8, sweep_csv: $c.csv, sweep_job: ft, tier_min: 0.5}
event: {steps: [{start_s: 120, depth: 0.1}], end_s: 300}
YAML
done

# (a) a duplicated cap row.
expect_exit2 "dr: duplicated cap" "dup.csv:4: cap: .*line 3" dr replay "$out/dup.yaml" --json
expect_exit2 "sweep: duplicated cap" "dup.csv:4: cap: .*line 3" sweep --csv "$out/dup.csv"
expect_exit2 "fit: duplicated cap" "dup.csv:4: cap: .*line 3" fit "$out/dup.csv" \
  --gpu a100-sxm4-80gb

# (b) no rows for the job asked for: named, with the file; not another job's complaint.
expect_exit2 "dr: no rows for the job" "dr: .*one.yaml:5: jobs.0.sweep_job: no job 'ft' in .*one.csv" \
  dr replay "$out/one.yaml" --json
expect_exit2 "sweep: no rows for the job" "no job 'ft'.*one.csv|one.csv.*no job 'ft'" \
  sweep --csv "$out/one.csv" --csv-job ft
expect_exit2 "fit: no rows for the job" "no job 'ft'.*one.csv|one.csv.*no job 'ft'" \
  fit "$out/one.csv" --job ft
for v in "dr replay $out/one.yaml --json" "sweep --csv $out/one.csv --csv-job ft" \
  "fit $out/one.csv --job ft"; do
  # shellcheck disable=SC2086 # the words of $v are the verb and its arguments
  if "$bin" $v 2>&1 | grep -q "job other"; then
    echo "FAIL: $v: reported under the other job's name"; fails=$((fails + 1))
  fi
done
finish dr_sweep_csv

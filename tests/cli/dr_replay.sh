#!/usr/bin/env bash
# End-to-end: `flexwatt dr replay` — --help, the JSON contract on a shipped replay, --svg,
# --measured-total / --field-projection, and bad input (exit 2, file:line: field).
# Usage: bash dr_replay.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out

help=$("$bin" dr replay --help 2>&1); rc=$?
[ $rc -eq 0 ] || { echo "FAIL: dr replay --help exit $rc"; fails=$((fails + 1)); }
grep -q "Example" <<<"$help" || { echo "FAIL: dr replay --help has no example"; fails=$((fails + 1)); }
expect_exit2 "dr without a subcommand" "subcommand" dr

# A short event on the shipped curves (fast): the JSON contract and the loop's targets.
cat >"$out/e.yaml" <<YAML
sample_period_s: 0.5
duration_s: 7200
baseline_w: measured
jobs:
  - {name: ft, gpus: 32, sweep_csv: $src/data/a100_power_cap_sweep.csv, sweep_job: ft_llama_8b_dolly, tier_min: 0.75}
  - {name: pt, gpus: 48, sweep_csv: $src/data/a100_power_cap_sweep.csv, sweep_job: pt_mpt_13b_lg, tier_min: 0.5, pausable: true}
event:
  steps:
    - {start_s: 1200, ramp_s: 300, depth: 0.25}
  end_s: 5400
  release_ramp_s: 600
YAML
printf 'timestamp,total (W)\n14:00,29000\n14:01,29500\n14:30,22000\n' >"$out/m.csv"
check "replay" "$bin" dr replay "$out/e.yaml" --json --svg "$out/e.svg" \
  --measured-total "$out/m.csv" >"$out/e.json"
check "fields" jqt 'has("minutes_above_target") and has("mean_overcut_frac") and has("ramp_down_s")
  and has("weighted_performance") and has("baseline_w") and has("hold_performance")
  and has("projected_vs_measured_rmse_frac") and .simulated' "$out/e.json"
check "per_job" jqt '[.per_job[] | has("name") and has("performance") and has("tier_min")] | all
  and length == 2' "$out/e.json"
check "tolerance stated" jqt '.tolerance_frac == 0.01 and .tolerance_w > 0' "$out/e.json"
check "0 minutes above target" jqt '.minutes_above_target == 0' "$out/e.json"
check "over-cut <= 2 %" jqt '.mean_overcut_frac <= 0.02' "$out/e.json"
check "ramp <= 5 min" jqt '.ramp_down_s >= 0 and .ramp_down_s <= 300' "$out/e.json"
check "tiers kept" jqt '[.per_job[] | .performance >= .tier_min] | all' "$out/e.json"
check "svg" grep -q "<svg" "$out/e.svg"
check "table" "$bin" dr replay "$out/e.yaml" --method equal >"$out/e.txt"
check "table names the tolerance" grep -q "tolerance 1.0 % of baseline" "$out/e.txt"
check "uncapped" "$bin" dr replay "$out/e.yaml" --method uncapped --json >"$out/u.json"
check "uncapped is above the target" jqt '.minutes_above_target > 30' "$out/u.json"

# On nodes of 4 GPUs (the coordinator's planning step on twice the nodes).
check "nodes of 4 GPUs" "$bin" dr replay "$out/e.yaml" --gpus-per-node 4 --json >"$out/c.json"
check "nodes of 4 GPUs: targets met" jqt '.minutes_above_target == 0
  and .mean_overcut_frac <= 0.02' "$out/c.json"
# --quiet --json: the JSON on stdout and nothing on stderr (a debugging printout once slipped in).
check "quiet: nothing on stderr" "$bin" dr replay "$out/e.yaml" --quiet --json >/dev/null \
  2>"$out/quiet.err"
check "quiet: stderr empty" test ! -s "$out/quiet.err"
"$bin" dr replay "$out/e.yaml" --method equal --quiet --json >"$out/equal.json"
check "the even split (curves-equal)" jq -e '.method == "equal"' "$out/equal.json"
expect_exit2 "a negative margin" "--z" dr replay "$out/e.yaml" --z -1
expect_exit2 "the retired site loop option" "--site-loop" dr replay "$out/e.yaml" \
  --site-loop replay
expect_exit2 "gpus per node out of range" "--gpus-per-node" dr replay "$out/e.yaml" \
  --gpus-per-node 0

# The shipped replays run.
for f in "$src"/scenarios/dr/*.yaml; do
  check "$(basename "$f") runs" "$bin" dr replay "$f" --json >/dev/null
done

# Bad input: exit 2 with file:line: field.
printf 'sample_period_s: 0.5\nduration_s: 7200\nbaseline_w: measured\njobs:\n  - {name: a, gpus: 8, sweep_csv: %s, sweep_job: nope, tier_min: 0.5}\nevent: {steps: [{start_s: 600, depth: 0.2}], end_s: 1200}\n' \
  "$src/data/a100_power_cap_sweep.csv" >"$out/bad.yaml"
expect_exit2 "unknown sweep job" "bad.yaml:5: jobs.0.sweep_job: no job 'nope'" dr replay "$out/bad.yaml"
sed 's/nope/ft_llama_8b_dolly/; s/depth: 0.2/depth: 7/' "$out/bad.yaml" >"$out/bad2.yaml"
expect_exit2 "depth out of range" "bad2.yaml:6: event.steps.0.depth: 7 is out of range" dr replay \
  "$out/bad2.yaml"
expect_exit2 "missing event file" "no-such.yaml" dr replay "$out/no-such.yaml"
expect_exit2 "bad method" "--method: 'fastest'" dr replay "$out/e.yaml" --method fastest
printf 'timestamp,total\n14:00,100\nlater,5\n' >"$out/badm.csv"
expect_exit2 "bad measured timestamp" "badm.csv:3: timestamp: expected a timestamp" dr replay \
  "$out/e.yaml" --measured-total "$out/badm.csv"
expect_exit2 "tolerance out of range" "--tolerance" dr replay "$out/e.yaml" --tolerance 2
expect_exit2 "svg into a missing folder" "--svg: cannot write" dr replay "$out/e.yaml" \
  --svg "$out/no/such/x.svg"
finish dr_replay

#!/usr/bin/env bash
# End-to-end: numeric flags of sim, eval and train reject nan/inf/out-of-range values with
# exit 2 before doing any work (issue 13 regressions).
# Usage: bash verb_flag_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
sc="$src/scenarios/grpo-7b-a100.yaml"
for d in inf nan 1e9 0; do
  expect_exit2 "sim --duration-s $d" "--duration-s: must be a finite number" sim "$sc" \
    --duration-s "$d" --out "$out/t"
done
expect_exit2 "sim --seed -1" "--seed" sim "$sc" --seed=-1 --out "$out/t"
expect_exit2 "sim on a directory" "is a directory" sim "$src/scenarios" --out "$out/t"
for d in inf nan 1e9; do
  expect_exit2 "eval --duration-s $d" "--duration-s must be" eval "$sc" --controllers static \
    --duration-s "$d"
done
expect_exit2 "train --out DIR" "--out .*is a directory" train "$sc" --out "$out" --iterations 1
expect_exit2 "train --out in a missing dir" "does not exist" train "$sc" \
  --out "$out/no/such/p.json" --iterations 1
expect_exit2 "authority --window-s 1e-9" "--window-s: must be at least the sample period" authority \
  "$sc" --window-s 1e-9
# Resuming with no more iterations than the checkpoint holds (used to print nan).
"$bin" train "$sc" --iterations 1 --envs 2 --episode-s 60 --seed 3 --out "$out/p.json" \
  >/dev/null 2>&1 || { echo "FAIL: train for the resume check"; fails=$((fails + 1)); }
expect_exit2 "resume with fewer iterations" "--iterations 1: .*already at iteration 1" train "$sc" \
  --iterations 1 --envs 2 --episode-s 60 --seed 3 --out "$out/p.json" --resume "$out/p.ckpt.json"
# A window longer than the run has no verdict: null in eval's JSON, '-' in its table.
check "eval: 300 s window on a 5 s run is null" bash -c \
  "'$bin' eval '$sc' --controllers static --seeds 1 --duration-s 5 --json | jq -e '.controllers[0].violation_rate[\"300\"].mean == null' >/dev/null"
finish verb_flag_errors

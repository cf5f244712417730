#!/usr/bin/env bash
# End-to-end: numeric flags of every verb reject nan/inf/out-of-range values with exit 2
# before doing any work (issue 13 regressions).
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
# Seeds are non-negative integers (a negative one used to wrap around), and flags whose
# "not given" was a sentinel value (-1) no longer take that value, or nan, as "not given".
alloc="$src/scenarios/flex/allocate-demo.yaml"
dr="$src/scenarios/flex/dr-fleet-h200.yaml"
caps_sc="$src/scenarios/caps-pipeline-imbalance-a100x8.yaml"
seed_msg="must be a non-negative integer"
expect_exit2 "allocate --study --seed -1" "--seed: $seed_msg" allocate --study --seed=-1
expect_exit2 "authority --seed -1" "--seed: $seed_msg" authority "$sc" --seed=-1
expect_exit2 "caps --seed-base -1" "--seed-base: $seed_msg" caps "$caps_sc" --seed-base=-1
expect_exit2 "pfi train --seed -1" "--seed: $seed_msg" pfi train --seed=-1
expect_exit2 "sweep --seed -1" "--seed: $seed_msg" sweep --scenario "$sc" --seed=-1
expect_exit2 "fleet-sim --seed -1" "--seed: $seed_msg" fleet-sim --etcd 127.0.0.1:1 \
  --out "$out/f" --seed=-1
expect_exit2 "fleet-sim --node-plant curves" "--node-plant: curves not in {sim,replay}" \
  fleet-sim --etcd 127.0.0.1:1 --out "$out/f" --node-plant curves
expect_exit2 "fleet-sim --node-plant replay without --mix" "node_plant: replay needs a mix" \
  fleet-sim --etcd 127.0.0.1:1 --out "$out/f" --scenario dr --node-plant replay
expect_exit2 "train --task caps --seed -1" "--seed: $seed_msg" train --task caps "$caps_sc" \
  --out "$out/c.json" --seed=-1
expect_exit2 "sweep --seed 2^64" "--seed: $seed_msg" sweep --scenario "$sc" \
  --seed 18446744073709551616
for v in nan inf -1; do
  expect_exit2 "allocate --cut $v" "--cut: must be a finite number in \[0, 1\]" allocate "$alloc" \
    --cut="$v"
  expect_exit2 "allocate --target-w $v" "--target-w: must be a finite number" allocate "$alloc" \
    --target-w="$v"
  expect_exit2 "allocate --study --rate-sigma $v" "--rate-sigma: must be a finite number" \
    allocate --study --rate-sigma="$v"
  for f in --dr-drop --dr-gain --dr-quantile; do
    expect_exit2 "allocate $f $v" "$f: must be a finite number" allocate --dr "$dr" "$f=$v"
  done
  expect_exit2 "pfi train --lambda $v" "--lambda: must be a finite number" pfi train --lambda="$v"
  expect_exit2 "sweep --warmup-s $v" "--warmup-s: must be a finite number" sweep --scenario "$sc" \
    --warmup-s="$v"
  expect_exit2 "sweep --measure-s $v" "--measure-s: must be a finite number" sweep \
    --scenario "$sc" --measure-s="$v"
  expect_exit2 "sweep --dwell-s $v" "--dwell-s: must be a finite number" sweep \
    --agent 127.0.0.1:1 --dwell-s="$v"
  expect_exit2 "fleet-sim --budget-fraction $v" "--budget-fraction: must be a finite number" \
    fleet-sim --etcd 127.0.0.1:1 --out "$out/f" --budget-fraction="$v"
  expect_exit2 "fleet-sim --duration-s $v" "--duration-s: must be a finite number" fleet-sim \
    --etcd 127.0.0.1:1 --out "$out/f" --duration-s="$v"
  expect_exit2 "demo --duration-s $v" "--duration-s:? must be a finite number" demo \
    --duration-s="$v" --out "$out/d"
done
expect_exit2 "allocate --study --fixed-gpus -1" "--fixed-gpus" allocate --study --fixed-gpus=-1
expect_exit2 "authority --duration-s -1" "--duration-s: must be > 0" authority "$sc" --duration-s=-1
# A directory where a file is expected: exit 2 naming it (reading one through a stream aborted).
mkdir -p "$out/adir"
expect_exit2 "train --task caps on a directory" "adir: is a directory" train --task caps \
  "$out/adir" --out "$out/c.json" --iterations 1
expect_exit2 "pfi predict --model DIR" "adir: is a directory" pfi predict "$src/examples" \
  --model "$out/adir"
expect_exit2 "train --resume DIR" "adir: is a directory" train "$sc" --out "$out/r.json" \
  --resume "$out/adir" --iterations 1
# Output files are checked before the work (the run used to end in "cannot write").
nodir="$out/a-file/sub"
: >"$out/a-file"
expect_exit2 "caps --svg unwritable" "--svg: cannot write" caps "$caps_sc" --seeds 1 \
  --svg "$nodir/x.svg"
expect_exit2 "allocate --study --svg unwritable" "--svg: cannot write" allocate --study \
  --svg "$nodir/x.svg"
expect_exit2 "allocate --dr --svg DIR" "--svg: .* is a directory" allocate --dr "$dr" --svg "$out"
expect_exit2 "pfi train --out unwritable" "--out: cannot write" pfi train --out "$nodir/m.json"
expect_exit2 "sweep --svg unwritable" "--svg: cannot write" sweep --scenario "$sc" \
  --svg "$nodir/s.svg"
expect_exit2 "fit --out DIR" "--out: .* is a directory" fit "$src/data/a100_power_cap_sweep.csv" \
  --out "$out"
expect_exit2 "train --log unwritable" "--log: cannot write" train "$sc" --out "$out/p2.json" \
  --log "$nodir/l.csv"
expect_exit2 "train --task caps --out unwritable" "--out: cannot write" train --task caps \
  "$caps_sc" --out "$nodir/c.json"
# A device where a file is expected: an error, not a read until memory runs out.
expect_exit2 "sim /dev/zero" "more than 64 MiB" sim /dev/zero --out "$out/z"
expect_exit2 "eval --controllers ppo:/dev/zero" "more than 64 MiB" eval "$sc" \
  --controllers ppo:/dev/zero --seeds 1
expect_exit2 "analyze /dev/zero" "a line longer than 16 MiB" analyze /dev/zero --budget-w 100
expect_exit2 "sweep --csv /dev/zero" "a line longer than 16 MiB" sweep --csv /dev/zero
# Valid values still pass: the cut and the target are applied.
check "allocate --cut 0.4 applied" bash -c \
  "'$bin' allocate '$alloc' --cut 0.4 --json | jq -e '.target_w > 0' >/dev/null"
finish verb_flag_errors

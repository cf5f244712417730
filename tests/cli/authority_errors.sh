#!/usr/bin/env bash
# End-to-end: `flexwatt authority` on bad usage and bad input exits 2 with a clear message.
# Usage: bash authority_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
expect_fail() { expect_exit2 "$1" "$2" authority "${@:3}"; }
sc="$src/scenarios/grpo-7b-a100.yaml"
expect_fail "no scenario" "SCENARIO" 
expect_fail "missing file" "nope.yaml" "$out/nope.yaml"
expect_fail "unknown knob" "--knob: unknown knob 'temperature'" "$sc" --knob temperature
expect_fail "unknown job" "--job: no job 'x'" "$sc" --job x
expect_fail "duration 0" "--duration-s: must be > 0" "$sc" --duration-s 0
expect_fail "warm-up past the end" "--duration-s: must exceed the warm-up" "$sc" \
  --duration-s 10 --warmup-s 10
expect_fail "points 1" "--points: must be >= 2" "$sc" --duration-s 10 --points 1
expect_fail "seeds 0" "--seeds: must be >= 1" "$sc" --duration-s 10 --seeds 0
expect_fail "threshold 2" "--threshold: must be in 0..1" "$sc" --duration-s 10 --threshold 2
expect_fail "bad --set" "jobs.0.group_size" "$sc" --set jobs.0.group_size=banana
# A job without knobs (pretraining).
expect_fail "no knobs" "exposes no workload knob" "$src/scenarios/pretrain-dense-h100x8.yaml" \
  --duration-s 10

if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "authority_errors: all checks passed"

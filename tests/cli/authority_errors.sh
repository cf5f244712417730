#!/usr/bin/env bash
# End-to-end: `flexwatt authority` on bad usage and bad input exits 2 with a clear message.
# Usage: bash authority_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
fails=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# expect_fail NAME PATTERN ARGS...: exit code 2 and stderr matching PATTERN.
expect_fail() {
  local name=$1 pattern=$2; shift 2
  "$bin" authority "$@" > /dev/null 2> "$out/err.txt"
  local rc=$?
  if [ $rc -ne 2 ]; then echo "FAIL: $name: exit $rc, expected 2"; fails=$((fails + 1)); return; fi
  if ! grep -qE -- "$pattern" "$out/err.txt"; then
    echo "FAIL: $name: stderr lacks '$pattern':"; cat "$out/err.txt"; fails=$((fails + 1))
  fi
}
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

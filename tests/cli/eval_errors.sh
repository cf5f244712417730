#!/usr/bin/env bash
# `flexwatt eval` rejects bad controllers, options and scenarios with exit code 2 and a
# message listing what is valid.
# Usage: bash eval_errors.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
scn="$src/scenarios/grpo-7b-a100.yaml"
source "$(dirname "$0")/lib/common.sh"
expect2() { expect_exit2 "$1" "$2" eval "${@:3}"; }
expect2 "unknown controller" "valid: .*oracle.*pid.*static.*threshold.*uncontrolled.*zeus" \
  "$scn" --controllers bogus
expect2 "unknown option" "unknown option 'kx' \(valid: knob, kp, ki" "$scn" --controllers pid:kp=1,kx=2
expect2 "bad value" "kp=abc: not a number" "$scn" --controllers pid:kp=abc
expect2 "bad knob" "valid: auto, caps" "$scn" --controllers threshold:knob=nope
expect2 "static pins its own actuator" "pins the actuator itself" "$scn" \
  --controllers static:knob=group_size,group_size=4
expect2 "static pin not a number" "group_size=x: not a number" "$scn" \
  --controllers static:knob=caps,group_size=x
expect2 "oracle window rule" "windows=hopping: expected tumbling or sliding" "$scn" \
  --controllers oracle:windows=hopping
expect2 "out of range names the range" "eta=2: out of range \[0.000000, 1.000000\]" "$scn" \
  --controllers zeus:eta=2
expect2 "fleet choice" "weight=x: expected nameplate or demand" "$scn" --controllers fleet:weight=x
expect2 "option before name" "before any controller" "$scn" --controllers kp=1,pid
expect2 "positional to a plain controller" "takes no argument" "$scn" --controllers pid:x.json
expect2 "missing controllers" "--controllers is required" "$scn"
expect2 "missing scenario file" "nope.yaml" nope.yaml --controllers pid
expect2 "bad --set" "budget.wats" "$scn" --controllers pid --set budget.wats=3
expect2 "bad seeds" "seeds" "$scn" --controllers pid --seeds 0
if [ $fails -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
echo "eval_errors: all checks passed"

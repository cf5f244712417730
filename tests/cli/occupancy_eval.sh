#!/usr/bin/env bash
# End-to-end: the four-arm occupancy eval of docs/occupancy.md, shortened (300 s, 2 seeds),
# on the simulated 72B rollout scenario with the shipped policy. Checks that it runs, that the
# JSON holds the four arms, and the direction of the result: PPO's 30 s violation rate is at
# most uncontrolled's (a direction, not the tuned magnitude of the full run).
# Usage: bash occupancy_eval.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1 src=$2
source "$(dirname "$0")/lib/common.sh"
scratch_dir out
scn="$src/scenarios/grpo-72b-a100x4-rollout.yaml"
pol="$src/policies/grpo-72b-a100x4.json"
ctl="uncontrolled,static:knob=gen_concurrency,value=4"
ctl="$ctl,threshold:knob=gen_concurrency,upper=0.98,lower=0.9,ppo:$pol"

check "scenario shipped" test -s "$scn"
check "policy shipped" test -s "$pol"
check "policy is a flexwatt policy" jqt '.format == "flexwatt-policy"' "$pol"
check "policy acts on gen_concurrency" jqt '.action.names | index("gen_concurrency") != null' "$pol"

"$bin" eval "$scn" --controllers "$ctl" --seeds 2 --duration-s 300 --json > "$out/a.json"; rc=$?
check "eval exits 0" test $rc -eq 0
check "json says simulated" jqt '.simulated == true' "$out/a.json"
check "json has 4 controllers" jqt '.controllers | length == 4' "$out/a.json"
check "json has 2 seeds" jqt '.seeds | length == 2' "$out/a.json"
check "ppo arm present" jqt '[.controllers[].name | startswith("ppo:")] | any' "$out/a.json"
check "static arm fixed at concurrency 4" \
  jqt '.controllers[] | select(.name | startswith("static")) | .notes.value == 4' "$out/a.json"
check "every arm produced tokens" jqt '[.controllers[].tokens.mean > 0] | all' "$out/a.json"

viol() {  # viol PREFIX: the 30 s violation rate of the arm whose name starts with PREFIX
  jq -r --arg p "$1" \
    '.controllers[] | select(.name | startswith($p)) | .violation_rate["30"].mean' "$out/a.json"
}
v_unc=$(viol uncontrolled) v_ppo=$(viol "ppo:")
echo "simulated 30 s violation rate: uncontrolled $v_unc, ppo $v_ppo"
check "ppo violates no more than uncontrolled (30 s)" \
  jq -en --argjson a "$v_ppo" --argjson b "$v_unc" '$a <= $b' > /dev/null

finish occupancy_eval

#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# A pipeline plan deployed through the node agent (`plan:PATH`, controllers/plan_controller.hpp;
# docs/caps.md "Deploying a plan through the agent"). A profile of the simulated 4-stage x 2
# pipeline job (`pipeline profile --sim`), its plan (`pipeline plan --json`), and an agent on the
# sim backend running that scenario in real time under `static:knob=caps,value=400`:
#  - PUT plan:PATH,stages=0+4:1+5:2+6:3+7 (the job's layout: pipeline p, stage s on GPU 4p+s):
#    every GPU's cap in /v1/status is its stage's plan cap;
#  - refused with 422 naming the field, the controller and caps unchanged: a plan whose
#    constant.stages[2].cap_w is not a cap, a straggler plan, stages= naming GPU 8 or the wrong
#    stage count, a file outside policy_dirs; `eval` refuses the bad file with exit 2;
#  - a cap above the GPU's 400 W maximum is written as 400 W, and the limiter's `clamped`
#    count grows;
#  - no stages=: the job's GPUs in order (on sim the scenario's, 0-7) in 4 blocks, stage s on
#    GPUs 2s and 2s+1;
#  - a schedule plan (stage 0 at 250 W for the first half of each step, 350 W for the second):
#    GPU 0's cap takes both values, keyed to the job's step count; a schedule plan without
#    segment starts is refused (422) unless schedule=off, which applies its constant caps;
#  - `frontier:profile=FILE` (the same profile, in policy_dirs): taken, caps below 400 W; a
#    profile outside policy_dirs and a malformed one: 422;
#  - the previous controller back: every cap 400 W again;
#  - SIGTERM with the plan in force: exit 0, "caps restored", restore file removed.
# About 30 s (the schedule section waits for two of the job's ~8 s steps, then both segments).
# Usage: agent_pipeline_plan.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
sc="$src/scenarios/caps-pp4-a100x8.yaml"
mkdir -p "$tmp/plans"
"$bin" pipeline profile --sim "$sc" --probe -o "$tmp/prof.csv" >/dev/null 2>"$tmp/prof.err"
check "the simulated job's profile is written" test -s "$tmp/prof.csv"
plan="$tmp/plans/plan.json"
"$bin" pipeline plan "$tmp/prof.csv" --microbatches 16 --tp 1 --global-batch 32 --json >"$plan"
check "the plan has 4 stages, constant caps" jqt '.stages == 4 and (.constant.stages | length == 4)' \
  "$plan"
check "the plan caps a stage below 390 W (else this test shows little)" jqt \
  '[.constant.stages[].cap_w | select(. != null and . < 390)] | length >= 1' "$plan"
# Per stage, the cap a GPU gets: the plan's, within the A100's 100-400 W; null: 400 (the default).
stage_caps=$(jq -c '[.constant.stages[].cap_w | if . == null then 400 else ([([., 100] | max), 400] | min) end]' "$plan")

cat >"$tmp/agent.yaml" <<YAML
backend: sim:$sc
period_s: 0.1
controller: static:knob=caps,value=400
job_silent_after_s: 0
policy_dirs: [$tmp/plans]
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
wait_healthz
url="http://127.0.0.1:$port"

round() { jq -c '[.[] | . * 10 | round / 10]'; }

check "the agent starts at 400 W" wait_status_caps '[400,400,400,400,400,400,400,400]'

# 1. Explicit stages: pipeline p, stage s on GPU 4p+s.
put_controller "plan:$plan,stages=0+4:1+5:2+6:3+7,period_s=0.5"
check "PUT plan: 202 accepted ($code: $(cat "$tmp/put.json"))" test "$code" = 202
want=$(jq -c '. + .' <<<"$stage_caps" | round)
check "each GPU's cap is its stage's plan cap ($want)" wait_status_caps "$want"

# 2. Refusals: 422 naming the field; the plan stays in force.
jq '.constant.stages[2].cap_w = "high"' "$plan" >"$tmp/plans/bad.json"
put_controller "plan:$tmp/plans/bad.json,stages=0+4:1+5:2+6:3+7"
check "a bad cap field: 422 ($code)" test "$code" = 422
check "  naming the file and constant.stages[2].cap_w ($(cat "$tmp/put.json"))" \
  grep -q 'bad.json: constant.stages\[2\].cap_w' "$tmp/put.json"
jq '.straggler_factor = 1.2' "$plan" >"$tmp/plans/strag.json"
put_controller "plan:$tmp/plans/strag.json,stages=0+4:1+5:2+6:3+7"
check "a straggler plan: 422 naming straggler_factor ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q straggler_factor '$tmp/put.json'"
put_controller "plan:$plan,stages=0+4:1+5:2+6:3+8"
check "stages= naming GPU 8: 422 naming stages= ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q 'stages=0+4:1+5:2+6:3+8: GPU 8' '$tmp/put.json'"
put_controller "plan:$plan,stages=0-3:4-7"
check "stages= with 2 stages for 4: 422 ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q '2 stages listed; the plan has 4' '$tmp/put.json'"
cp "$plan" "$tmp/outside.json"
put_controller "plan:$tmp/outside.json"
check "a file outside policy_dirs: 422 ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q 'outside policy_dirs' '$tmp/put.json'"
status
check "the plan is still in force" jqt '.controller | startswith("plan:")' "$tmp/status.json"
check "  and its caps" wait_status_caps "$want"
expect_exit2 "eval refuses the bad plan (exit 2, naming the field)" \
  'bad.json: constant.stages\[2\].cap_w' eval "$sc" --duration-s 10 --seeds 1 \
  --controllers "plan:$tmp/plans/bad.json"

# 3. A cap above the GPU's maximum: clamped by the limiter, and counted.
clamped0=$(jq '.limiter_actions_total.clamped // 0' "$tmp/status.json")
jq '.constant.stages[0].cap_w = 450' "$plan" >"$tmp/plans/high.json"
put_controller "plan:$tmp/plans/high.json,stages=0+4:1+5:2+6:3+7,period_s=0.5"
check "PUT the 450 W plan: 202 ($code)" test "$code" = 202
want_high=$(jq -c '.[0] = 400 | . + .' <<<"$stage_caps" | round)
check "stage 0's 450 W is 400 W on GPUs 0 and 4" wait_status_caps "$want_high"
# The count is published with the status, which may lag the caps by a tick: wait up to ~5 s.
clamped_grew() {
  for _ in $(seq 50); do
    status
    jq -e --argjson c "$clamped0" '.limiter_actions_total.clamped > $c' "$tmp/status.json" \
      >/dev/null && return 0
    sleep 0.1
  done
  return 1
}
check "the limiter's clamped count grew from $clamped0" clamped_grew

# 4. No stages=: the job's GPUs in order (on the sim backend the scenario's job, GPUs 0-7),
# cut into the plan's 4 stages: stage s on GPUs 2s and 2s+1 (the registration order of a real
# job's GPUs: tests/controllers/plan_controller_test.cpp).
put_controller "plan:$plan,period_s=0.5"
check "PUT plan without stages=: 202 ($code: $(cat "$tmp/put.json"))" test "$code" = 202
want_blocks=$(jq -c '[.[] | ., .]' <<<"$stage_caps" | round)
check "stage s on GPUs 2s and 2s+1 ($want_blocks)" wait_status_caps "$want_blocks"

# 4b. A step-keyed schedule (plan_controller.hpp): stage 0 at 250 W for the first half of each
# iteration and 350 W for the second, the others at their constant caps; anchored at the
# simulated job's step boundaries (its step count: the simulator sends no step age). The
# segments are shorter than the 2.2 s settling default here, so min_segment_s=0 and no leads.
T=$(jq '.constant.pipeline_time_s' "$plan")
jq --argjson T "$T" '.constant.stages as $c | .mode = "schedule" | .schedule.pipeline_time_s = $T
  | .schedule.segments = [[{cap_w: 250, start_s: 0}, {cap_w: 350, start_s: ($T / 2)}]]
      + [range(1; 4) as $s | [{cap_w: $c[$s].cap_w, start_s: 0}]]' "$plan" >"$tmp/plans/sched.json"
put_controller "plan:$tmp/plans/sched.json,stages=0+4:1+5:2+6:3+7,min_segment_s=0,lead_up_s=0,lead_down_s=0,period_s=0.1"
check "PUT a schedule plan: 202 ($code: $(cat "$tmp/put.json"))" test "$code" = 202
# gpu1_holds: GPU 1 (stage 1) is at its constant cap (~10 s at most, the PUT taking effect).
want1=$(jq '.[1] | . * 10 | round / 10' <<<"$stage_caps")
gpu1_holds() {
  for _ in $(seq 100); do
    status
    [ "$(jq '.gpus | sort_by(.index)[1].cap_w | . * 10 | round / 10' "$tmp/status.json")" = "$want1" ] &&
      return 0
    sleep 0.1
  done
  return 1
}
check "GPU 1 holds stage 1's constant cap ($want1)" gpu1_holds
# seen_both: GPU 0's cap takes both segment caps (~20 s at most).
seen_both() {
  local seen=""
  for _ in $(seq 200); do
    status
    seen="$seen $(jq '.gpus | sort_by(.index)[0].cap_w | round' "$tmp/status.json")"
    case $seen in *250*350* | *350*250*) return 0 ;; esac
    sleep 0.1
  done
  echo "  GPU 0's caps seen:$seen (the job's step time ~$T s)"
  return 1
}
check "GPU 0 follows its segments (250 and 350 W) within the job's steps" seen_both
check "  while GPU 1 still holds its cap" gpu1_holds
jq 'del(.schedule.segments[][].start_s)' "$tmp/plans/sched.json" >"$tmp/plans/old-sched.json"
put_controller "plan:$tmp/plans/old-sched.json,stages=0+4:1+5:2+6:3+7"
check "a schedule plan without segment starts: 422 saying so ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q 'no segment starts' '$tmp/put.json'"
put_controller "plan:$tmp/plans/old-sched.json,stages=0+4:1+5:2+6:3+7,schedule=off,period_s=0.5"
check "  with schedule=off: its constant caps ($code)" wait_status_caps "$want"

# 4c. `frontier` from a profile file in the agent (it re-plans for a straggler; before issue 46's
# deploy work the agent refused every profile file): the same profile inside policy_dirs is
# taken and the caps move below 400 W; one outside is 422 naming policy_dirs, a malformed one
# 422 naming its line and field.
cp "$tmp/prof.csv" "$tmp/plans/prof.csv"
put_controller "frontier:profile=$tmp/plans/prof.csv,microbatches=16"
check "frontier from a profile in policy_dirs: 202 ($code: $(cat "$tmp/put.json"))" test "$code" = 202
below_400() {
  for _ in $(seq 100); do
    status
    jq -e '.controller | test("^frontier")' "$tmp/status.json" >/dev/null &&
      jq -e '[.gpus[].cap_w | select(. < 399)] | length >= 1' "$tmp/status.json" >/dev/null &&
      return 0
    sleep 0.1
  done
  echo "  controller $(jq -c .controller "$tmp/status.json"), caps $(jq -c '[.gpus[].cap_w]' "$tmp/status.json")"
  return 1
}
check "  its plan caps some GPU below 400 W" below_400
put_controller "frontier:profile=$tmp/prof.csv,microbatches=16"
check "a profile outside policy_dirs: 422 ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q 'outside policy_dirs' '$tmp/put.json'"
sed '3s/,[^,]*$/,-1/' "$tmp/plans/prof.csv" >"$tmp/plans/bad-prof.csv"
put_controller "frontier:profile=$tmp/plans/bad-prof.csv,microbatches=16"
check "a malformed profile: 422 naming line 3 ($code: $(cat "$tmp/put.json"))" \
  bash -c "[ '$code' = 422 ] && grep -q 'bad-prof.csv:3' '$tmp/put.json'"

# 5. The previous controller back: every cap at 400 W.
put_controller "static:knob=caps,value=400"
check "the previous controller back: 202 ($code)" test "$code" = 202
check "every cap 400 W again" wait_status_caps '[400,400,400,400,400,400,400,400]'

# 6. Exit with the plan in force: the agent restores the caps found at start.
put_controller "plan:$plan,stages=0+4:1+5:2+6:3+7,period_s=0.5"
check "the plan again" wait_status_caps "$want"
sigterm_restores "$tmp/prof.err"
finish agent_pipeline_plan

#!/usr/bin/env bash
# shellcheck disable=SC2016  # the $names in single quotes are jq's, not the shell's
# A pipeline plan put through the site coordinator reaches the node agent (`plan:fleet`; docs/caps.md
# "Deploying a plan through the agent"): one etcd member, a coordinator with its endpoint on
# loopback, an agent on the sim backend (the 4-stage x 2 pipeline scenario) following it.
#  - PUT /v1/plans/<job> on the coordinator: a bad plan is 400 naming its field; a good one 200;
#  - PUT plan:fleet on the agent: every GPU's cap in /v1/status is its stage's plan cap;
#  - the plan replaced on the coordinator: the agent's caps follow, its log says so;
#  - the plan deleted: the caps stay, the log says why; plan:fleet for a job with no plan: 422;
#  - SIGTERM: exit 0, the caps found at start put back (the agent's log, its restore file gone).
# About 10 s. Usage: agent_fleet_plan.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
command -v etcd >/dev/null || need_tool "etcd (etcd-server)"
etcd_pid=
coord_pid=
stop_fleet() { for p in $coord_pid $etcd_pid; do kill "$p" 2>/dev/null; done; }
trap 'stop_fleet; agent_cleanup' EXIT
start_etcd "$tmp" "$port"
up=$?
check "etcd is up" test $up = 0
cport=$((base + 2))
coord="http://127.0.0.1:$cport"
cat >"$tmp/c.yaml" <<YAML
site: hall-p
id: coord-a
etcd: [$c]
budget_w: 9000
refresh_s: 0.5
expiry_s: 5
listen: 127.0.0.1:$cport
allow_unauthenticated_writes: true
YAML
"$bin" coordinator --config "$tmp/c.yaml" >"$tmp/coord.out" 2>"$tmp/coord.err" &
coord_pid=$!
sc="$src/scenarios/caps-pp4-a100x8.yaml"
cat >"$tmp/agent.yaml" <<YAML
backend: sim:$sc
period_s: 0.1
controller: static:knob=caps,value=400
job_silent_after_s: 0
fleet:
  etcd: [$c]
  site: hall-p
  node: pp-node-0
  safe_share_w: 3200
  lease_ttl_s: 2
  allow_unauthenticated_writes: true
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
track_agent $!
check "the agent answers" wait_healthz
url="http://127.0.0.1:$port"
# plan CAP...: a constant plan with one stage per cap, as `pipeline plan --json` writes it.
plan() {
  jq -cn --argjson caps "$(printf '%s\n' "$@" | jq -cs .)" '{stages: ($caps | length),
    microbatches: 8, mode: "constant", constant: {stages: [$caps | to_entries[] |
    {stage: .key, cap_w: .value, forward_mhz: 1200, backward_mhz: 1200}]}}'
}
put_plan() {  # JOB BODY: the HTTP code; the answer in $tmp/plan.json
  curl -s -o "$tmp/plan.json" -w '%{http_code}' --max-time 10 -X PUT "$coord/v1/plans/$1" \
    --data-binary "$2"
}
check "the agent starts at 400 W" wait_status_caps '[400,400,400,400,400,400,400,400]'
ok=0
for _ in $(seq 100); do
  curl -sf "$coord/v1/grid/status" | jq -e '.leader == true' >/dev/null && { ok=1; break; }
  sleep 0.1
done
check "the coordinator leads" test $ok = 1
job=$(jq -r '.plant_jobs[0].name // empty' "$tmp/status.json")
check "the node runs a job ($job)" test -n "$job"

bad=$(plan 300 250 200 350 | jq -c '.constant.stages[2].cap_w = "high"')
code=$(put_plan "$job" "$bad")
check "a bad plan is 400 naming its field ($code: $(cat "$tmp/plan.json"))" \
  jqt '.error | test("constant.stages\\[2\\].cap_w")' "$tmp/plan.json"
check "  ... with 400" test "$code" = 400
put_controller "plan:fleet,stages=0+4:1+5:2+6:3+7"
check "plan:fleet before any plan is stored: 422 ($code: $(cat "$tmp/put.json"))" test "$code" = 422
check "  ... naming the coordinator's route" jqt '.error | test("/v1/plans/")' "$tmp/put.json"
code=$(put_plan "$job" "$(plan 300 250 200 350)")
check "the plan is stored through the coordinator ($code: $(cat "$tmp/plan.json"))" test "$code" = 200
check "GET /v1/plans lists it" jqt --arg j "$job" '.plans | length == 1 and .[0].job == $j and .[0].stages == 4' \
  <(curl -s "$coord/v1/plans")
code=000
for _ in $(seq 50); do  # the node reads plans every lease_ttl_s / 3
  put_controller "plan:fleet,stages=0+4:1+5:2+6:3+7"
  [ "$code" = 202 ] && break
  sleep 0.2
done
check "PUT plan:fleet: 202 ($code: $(cat "$tmp/put.json"))" test "$code" = 202
check "each GPU's cap is its stage's plan cap" wait_status_caps '[300,250,200,350,300,250,200,350]'
check "the plan replaced: 200" test "$(put_plan "$job" "$(plan 280 280 220 390)")" = 200
check "the caps follow the new plan" wait_status_caps '[280,280,220,390,280,280,220,390]'
check "the agent's log says it took the new plan" grep -q "prepared on the fleet's new plan" \
  "$tmp/agent.err"
code=$(curl -s -o "$tmp/del.json" -w '%{http_code}' -X DELETE "$coord/v1/plans/$job")
check "the plan deleted: 200 ($code)" test "$code" = 200
said=0
for _ in $(seq 50); do grep -q "the one in force stays" "$tmp/agent.err" && { said=1; break; }; sleep 0.1; done
check "the agent's log says the plan in force stays" test $said = 1
check "the caps stay" wait_status_caps '[280,280,220,390,280,280,220,390]'
sigterm_restores "$tmp/coord.err"
finish agent_fleet_plan

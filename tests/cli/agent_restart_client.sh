#!/usr/bin/env bash
# A training job survives a restart of flexwatt agent (issue 44 item 7). The PyTorch GRPO
# trainer (examples/torch_grpo.py, through clients/python/flexwatt_client.py) runs against an
# agent on the fake NVML library (4 GPUs, 350 W found, caps kept across processes through
# FAKE_NVML_STATE) whose controller caps every GPU at 250 W and hands the job
# gen_concurrency=32, group_size=4. Mid-loop the agent is stopped (SIGTERM), stays away for a
# few seconds and is started again on the same port. Checks: the caps were restored to the
# 350 W found at the stop and are written (250 W) again after the restart; the trainer kept
# stepping while the agent was away, with the knobs last in force (every step ran 32/4); it
# logged once that the agent went away and once that it came back; it re-registered the same
# job id with the restarted agent (its GET /v1/jobs lists it, its audit log has the
# registration and the progress reports up to the last step); the loop exits 0 having run all
# its steps. Every wait is bounded (about 30 s in all). Under CI=true a missing PyTorch fails.
# Usage: agent_restart_client.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
build=$(dirname "$bin")
fake=$build/tests/telemetry/fake_nvml/libnvidia-ml.so.1
source "$(dirname "$0")/lib/agent.sh"
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
use_torch_python  # sets py (lib/agent.sh)
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 4
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
SCRIPT
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
caps() { { tr '\n' ' ' < "$tmp/state.txt"; } 2>/dev/null; }
found="0 350 1 350 2 350 3 350 "
capped="0 250 1 250 2 250 3 250 "
# wait_caps WANT: waits (<= 5 s) until the fake's caps read WANT.
wait_caps() {
  for _ in $(seq 50); do [ "$(caps)" = "$1" ] && return 0; sleep 0.1; done
  echo "  caps '$(caps)', want '$1'"
  return 1
}
# start_agent N: agent number N (its audit log audit-N.jsonl) in the background, up on $port.
start_agent() {
  cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: static:knob=cap,value=250,gen_concurrency=32,group_size=4,period_s=0.1
budget_w: 1400
$agent_local
  audit_log: $tmp/audit-$1.jsonl
YAML
  "$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent-$1.out" 2>"$tmp/agent-$1.err" &
  track_agent $!
  wait_healthz || { echo "  agent $1 never answered; stderr: $(tail -3 "$tmp/agent-$1.err")"; return 1; }
}
# stop_agent: SIGTERM; the agent exits (<= 10 s); sets $rc.
stop_agent() {
  kill -TERM "$agent"
  for _ in $(seq 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  wait "$agent" 2>/dev/null; rc=$?
}
# job_listed: the agent on $port lists torch-r (GET /v1/jobs).
job_listed() {
  curl -s --max-time 1 "http://127.0.0.1:$port/v1/jobs" | jq -e 'any(.jobs[]; .id == "torch-r")' \
    >/dev/null 2>&1
}
steps_done() { wc -l < "$tmp/steps.jsonl"; }
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s while the trainer runs; 1 on timeout
# or when the trainer has exited.
wait_for() {
  local n=$(($1 * 10)); shift
  for _ in $(seq "$n"); do
    "$@" && return 0
    kill -0 "$trainer" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
at_least_steps() { [ "$(steps_done)" -ge "$1" ]; }

check "agent starts" start_agent 1
check "the controller caps the GPUs at 250 W" wait_caps "$capped"
steps=150
t_start=$(date +%s.%N)
# --knob-wait-s paces the loop (the knobs never change, so each step waits 0.1 s for them).
timeout 60 "$py" "$src/examples/torch_grpo.py" --url "http://127.0.0.1:$port" --job-id torch-r \
  --steps $steps --prompts 4 --gen-len 8 --seed 3 --first-knobs-wait-s 10 --knob-wait-s 0.1 \
  >"$tmp/steps.jsonl" 2>"$tmp/trainer.err" &
trainer=$!
trap 'kill "$trainer" 2>/dev/null; agent_cleanup' EXIT
check "the job registers" wait_for 20 job_listed
check "the trainer runs 10 steps" wait_for 20 at_least_steps 10

# The agent goes away mid-loop.
stop_agent
check "agent 1 exits 0 on SIGTERM (rc=$rc)" test "$rc" -eq 0
check "the stop restored the 350 W found" test "$(caps)" = "$found"
away_from=$(steps_done)
sleep 3
away_to=$(steps_done)
check "the trainer is still running with the agent away" kill -0 "$trainer"
check "the trainer kept stepping while the agent was away ($away_from -> $away_to steps)" \
  test "$away_to" -gt "$away_from"
check "no cap was written while the agent was away" test "$(caps)" = "$found"

# The agent comes back on the same port.
check "agent restarts on the same port" start_agent 2
check "the restarted agent caps the GPUs again (250 W)" wait_caps "$capped"
check "the job re-registered with the restarted agent (GET /v1/jobs lists torch-r)" \
  wait_for 15 job_listed
back_at=$(steps_done)
check "the trainer is still running after re-registering ($back_at of $steps steps)" \
  kill -0 "$trainer"

wait $trainer; rc=$?
echo "trainer: $(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" \
  "for $steps steps; agent away from step $away_from, back by step $back_at"
check "trainer exits 0 (rc=$rc: $(tail -1 "$tmp/trainer.err"))" test "$rc" -eq 0
check "trainer ran $steps steps ($(steps_done))" test "$(steps_done)" -eq $steps
s=$tmp/steps.jsonl
check "every step ran with the knobs last in force (32, 4), also while the agent was away" \
  jqt -s 'all(.gen_concurrency == 32 and .group_size == 4)' "$s"
check "the client logged once that the agent went away" \
  test "$(grep -c 'flexwatt agent unreachable' "$tmp/trainer.err")" -eq 1
check "the client logged once that the agent was back" \
  test "$(grep -c 'flexwatt agent is back' "$tmp/trainer.err")" -eq 1
check "no traceback from the trainer" bash -c "! grep -q Traceback '$tmp/trainer.err'"
a1=$tmp/audit-1.jsonl a2=$tmp/audit-2.jsonl
reg='select(.method == "POST" and .path == "/v1/jobs" and .status == 201) | .body | fromjson'
check "agent 1 got the registration" jqt -s "[.[] | $reg | .id] == [\"torch-r\"]" "$a1"
check "agent 2 got the re-registration: same id, same knob ladder, defaults = knobs in force" \
  jqt -s "[.[] | $reg] | length == 1 and .[0].id == \"torch-r\"
          and .[0].knobs.gen_concurrency == {min: 1, max: 64, step: 1, default: 32}
          and .[0].knobs.group_size == {min: 2, max: 16, step: 2, default: 4}" "$a2"
prog='select(.path == "/v1/jobs/torch-r/progress" and .status == 200) | .body | fromjson'
last_tokens=$(tail -1 "$s" | jq .tokens_total)
check "agent 2's last progress: $steps steps, $last_tokens tokens" \
  jqt -s "[.[] | $prog] | last | .steps_total == $steps and .tokens_total == $last_tokens" "$a2"
check "job deregistered from agent 2 at the end" \
  jqt -s 'any(.method == "DELETE" and .path == "/v1/jobs/torch-r" and .status < 300)' "$a2"
explain_process trainer "$trainer" "$tmp/trainer.err"
stop_agent
check "agent 2 exits 0 on SIGTERM (rc=$rc)" test "$rc" -eq 0
check "the final stop restored the 350 W found" test "$(caps)" = "$found"
explain_process agent "$agent" "$tmp/agent-2.err"
finish agent_restart_client

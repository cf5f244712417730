#!/usr/bin/env bash
# The GRPO example loop (examples/grpo_loop.py) under flexwatt agent on the sim backend: the job
# registers, obeys the knobs the PID controller hands it between rollout batches, and the node
# holds its budget (no 2 s window over budget, no fallback after it registered; deadlines are the benchmark's business, not a test's) in a short (~7 s) real-time run (SIGTERM ends it).
# Usage: agent_sim_grpo.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
command -v python3 >/dev/null || need_tool python3
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$src/scenarios/grpo-7b-a100.yaml
period_s: 0.1
controller: pid:knob=gen_concurrency,period_s=0.5,signal=mean,measure_s=2
window_s: 2
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" --duration-s 60 --json >"$tmp/agent.json" 2>"$tmp/agent.err" &
track_agent $!
wait_healthz
timeout 20 python3 "$src/examples/grpo_loop.py" --url "http://127.0.0.1:$port" --steps 20 \
  --seconds-per-batch 0.3 >"$tmp/grpo.jsonl" 2>"$tmp/grpo.err"
check "the example loop ran 20 steps ($(tail -1 "$tmp/grpo.err"))" test "$(wc -l < "$tmp/grpo.jsonl")" -eq 20
first=$(head -1 "$tmp/grpo.jsonl" | jq '.gen_concurrency')
last=$(tail -1 "$tmp/grpo.jsonl" | jq '.gen_concurrency')
check "the loop took new knobs from the agent ($first -> $last)" test "$first" != "$last"
status=$(curl -s --max-time 2 "http://127.0.0.1:$port/v1/status")
check "no budget window violated" test "$(jq '.windows[0].violations_total' <<< "$status")" -eq 0
check "window of 2 s judged" test "$(jq '.windows[0].window_s' <<< "$status")" = 2
under=$(jq '.windows[0].mean_w <= (.budget.watts * (.gpus | length))' <<< "$status")
check "trailing mean under the budget" test "$under" = true
# The knob controller cannot act while no job is registered (no_actuator): before the loop
# registered and after it left (the example deletes its job on exit); no other fallback.
# The loop deletes its job as it exits; the agent's next ticks see it gone.
for _ in $(seq 30); do
  status=$(curl -s --max-time 2 "http://127.0.0.1:$port/v1/status")
  [ "$(jq -r '.fallback_reason' <<< "$status")" = no_actuator ] && break
  sleep 0.1
done
check "the job left: the knob controller cannot act again ($(jq -c .fallbacks_total <<< "$status"))" \
  test "$(jq -r '.fallback_reason' <<< "$status")" = no_actuator
check "no fallback but no_actuator, before the job and after it" \
  test "$(jq '.fallbacks_total | .no_actuator <= 2 and ([.[]] | add) == .no_actuator' <<< "$status")" = true
kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
check "agent exits 0 (rc=$rc)" test "$rc" -eq 0
check "agent summary written" test "$(jq '.ticks > 0 and .restored' "$tmp/agent.json")" = true
echo "fails=$fails"
[ "$fails" -eq 0 ]

#!/usr/bin/env bash
# The PyTorch GRPO trainer (examples/torch_grpo.py: a tiny transformer trained on CPU) on the
# knob channel of flexwatt agent (sim backend). Once the job has registered (the trainer waits
# for its first knobs), the agent's controller becomes one that hands it gen_concurrency=32,
# group_size=8; after the trainer's third step, one that hands gen_concurrency=2, group_size=4.
# Checks: every step ran with one knob setting the agent had handed out before the step began
# (never a change inside a batch), both settings ran; per-step work follows the knobs
# (completions = prompts x group_size, waves = ceil(completions / gen_concurrency), never more
# sequences in flight than gen_concurrency); generation throughput (tokens per CPU second, and
# per wall second) is higher with 32 in flight than with 2; the agent received the trainer's
# tokens, steps and phases (its audit log). Under CI=true a missing PyTorch fails the test.
# Usage: agent_torch_grpo.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
use_torch_python  # sets py (lib/agent.sh)
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$src/scenarios/grpo-7b-a100.yaml
period_s: 0.1
controller: uncontrolled
window_s: 2
$agent_local
  audit_log: $tmp/audit.jsonl
YAML
"$bin" agent --config "$tmp/agent.yaml" --duration-s 120 --json >"$tmp/agent.json" 2>"$tmp/agent.err" &
track_agent $!
check "agent answers /healthz" wait_healthz
steps=8
# put_controller SPEC: PUT /v1/controller; the HTTP status and answer in $put.
put_controller() {
  put=$(curl -s -w ' HTTP %{http_code}' --max-time 5 -X PUT "http://127.0.0.1:$port/v1/controller" \
    -d "{\"controller\": \"$1\"}")
}
t_start=$(date +%s.%N)
timeout 90 "$py" "$src/examples/torch_grpo.py" --url "http://127.0.0.1:$port" --job-id torch-1 \
  --steps $steps --prompts 8 --gen-len 12 --seed 3 --first-knobs-wait-s 20 \
  >"$tmp/steps.jsonl" 2>"$tmp/trainer.err" &
trainer=$!
# Once the job is registered: a controller with its own knobs (the trainer waits for them).
for _ in $(seq 300); do
  curl -s --max-time 1 "http://127.0.0.1:$port/v1/jobs" | jq -e 'any(.jobs[]; .id == "torch-1")' \
    >/dev/null 2>&1 && break
  kill -0 $trainer 2>/dev/null || break
  sleep 0.05
done
put_controller "static:knob=gen_concurrency,value=32,group_size=8,period_s=0.2"
check "first controller in force ($put)" grep -q 'HTTP 2' <<<"$put"
# After the third step: a controller that hands other knobs (the job's next batch takes them).
for _ in $(seq 600); do
  [ "$(wc -l < "$tmp/steps.jsonl")" -ge 3 ] && break
  kill -0 $trainer 2>/dev/null || break
  sleep 0.05
done
put_controller "static:knob=gen_concurrency,value=2,group_size=4,period_s=0.2"
check "second controller in force ($put)" grep -q 'HTTP 2' <<<"$put"
wait $trainer; rc=$?
echo "trainer: $(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s for $steps steps"
check "trainer exits 0 (rc=$rc: $(tail -1 "$tmp/trainer.err"))" test "$rc" -eq 0
check "trainer ran $steps steps" test "$(wc -l < "$tmp/steps.jsonl")" -eq $steps
s=$tmp/steps.jsonl
check "first steps ran with the first controller's knobs (32, 8)" \
  jqt -s '.[0:3] | all(.gen_concurrency == 32 and .group_size == 8)' "$s"
check "last steps ran with the second controller's knobs (2, 4)" \
  jqt -s '.[-2:] | all(.gen_concurrency == 2 and .group_size == 4)' "$s"
check "knobs changed once, between batches, and stayed" \
  jqt -s '[.[] | [.gen_concurrency, .group_size]] as $k
          | ([range(1; length) | select($k[.] != $k[. - 1])] | length) == 1' "$s"
check "the trainer used the knobs of the agent's version it had seen (32/8 at 1+, 2/4 later)" \
  jqt -s 'all(.knob_version >= 1)' "$s"
check "knob versions never go back; one version, one setting" \
  jqt -s '(map(.knob_version) | . == sort) and
          (group_by(.knob_version) | all(map([.gen_concurrency, .group_size]) | unique | length == 1))' "$s"
check "per-step work follows group_size: completions = 8 prompts x group_size, tokens = x 12" \
  jqt -s 'all(.completions == 8 * .group_size and .gen_tokens == .completions * 12)' "$s"
check "in-flight sequences follow gen_concurrency: waves = ceil(completions / c), widest <= c" \
  jqt -s 'all(.waves == ((.completions + .gen_concurrency - 1) / .gen_concurrency | floor)
              and .max_in_flight == ([.gen_concurrency, .completions] | min))' "$s"
check "tokens_total adds up the steps' tokens" \
  jqt -s '.[-1].tokens_total == (map(.gen_tokens) | add)' "$s"
# Throughput: the median over each setting's steps (the first step warms up and is left out).
ratio() {
  jq -rs --arg f "$1" '
    def med: sort | .[length / 2 | floor];
    (map(select(.step > 0 and .gen_concurrency == 32) | .[$f]) | med) as $hi
    | (map(select(.gen_concurrency == 2) | .[$f]) | med) as $lo
    | ($hi / $lo * 100 | round) / 100' "$s"
}
cpu_ratio=$(ratio gen_tokens_per_cpu_s)
wall_ratio=$(ratio gen_tokens_per_s)
echo "generation throughput, 32 in flight / 2 in flight: ${cpu_ratio}x per CPU s, ${wall_ratio}x per wall s"
check "tokens per CPU second higher with 32 in flight than with 2 (${cpu_ratio}x >= 1.5)" \
  jq -en "${cpu_ratio:-0} >= 1.5" >/dev/null
check "tokens per wall second higher with 32 in flight than with 2 (${wall_ratio}x >= 1.3)" \
  jq -en "${wall_ratio:-0} >= 1.3" >/dev/null
# What the agent received: one progress report per phase, the last with the trainer's totals.
a=$tmp/audit.jsonl
prog='select(.path == "/v1/jobs/torch-1/progress" and .status == 200) | .body | fromjson'
check "agent got generate and update phases" \
  jqt -s "[.[] | $prog | .phase] | unique == [\"generate\", \"update\"]" "$a"
last_tokens=$(tail -1 "$s" | jq .tokens_total)
check "agent's last progress: $steps steps, $last_tokens tokens" \
  jqt -s "[.[] | $prog] | last | .steps_total == $steps and .tokens_total == $last_tokens" "$a"
check "job deregistered at the end" \
  jqt -s 'any(.method == "DELETE" and .path == "/v1/jobs/torch-1" and .status < 300)' "$a"
kill -TERM "$agent"; wait "$agent"; rc=$?; agent=
check "agent exits 0 (rc=$rc)" test "$rc" -eq 0
finish agent_torch_grpo

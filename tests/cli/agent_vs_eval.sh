#!/usr/bin/env bash
# The agent holds its budget as `eval` does: examples/grpo_loop.py runs under `flexwatt agent`
# on the sim backend (grpo-7b-a100, seed 1, 600 simulated seconds at time_scale 40, ~15 s wall)
# with the PID controller on gen_concurrency, and obeys the knobs it is handed; the agent's
# recorded trace is analysed (`flexwatt analyze`, 30 s windows, the scenario's 314.6 W budget)
# and compared with `flexwatt eval` of the same scenario, controller and duration:
#   - the agent's 30 s violation rate lies within eval's 95 % CI over seeds 1..5 (no widening);
#   - like for like, the same seed: the agent's loop steps the simulator exactly as eval's loop
#     does (on sim a missed deadline is caught up, not skipped), so its trace is eval's trace
#     for that seed: the same 30 s and per-sample (0.5 s) rates, the same rows.
# FW_AGENT_SEED=N (1..5) runs the agent on seed N instead of 1 (for notes). FW_AGENT_SHIELD=1
# turns the limiter's budget shield on in both (agent `limiter: {budget_shield: true}`, eval
# `--shield`): the shield acts at every tick in both (tests/cli/agent_vs_eval_shield.sh).
# Usage: agent_vs_eval.sh FLEXWATT_BIN SOURCE_DIR [OUT_JSON]   (OUT_JSON: the figures, for notes)
set -u
bin=$1
src=$2
out_json=${3:-}
source "$(dirname "$0")/lib/agent.sh"
command -v python3 >/dev/null || need_tool python3
scenario=$src/scenarios/grpo-7b-a100.yaml
controller=pid:knob=gen_concurrency
duration_s=600
seed=${FW_AGENT_SEED:-1}  # the agent's seed (1..5: one of eval's)
budget_w=314.6  # the scenario's per-GPU budget (one GPU)
shield_yaml= shield_flag=()
if [ "${FW_AGENT_SHIELD:-0}" = 1 ]; then
  shield_yaml="limiter: {budget_shield: true}" shield_flag=(--shield)
fi
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$scenario
seed: $seed
time_scale: 40
period_s: 0.5
controller: $controller
sim_knobs_without_job: true  # eval has no job channel: its job's knobs are reachable from tick 0
trace_dir: $tmp/trace
$shield_yaml
$agent_local
YAML
"$bin" agent --config "$tmp/agent.yaml" --duration-s "$duration_s" --json \
  >"$tmp/agent.json" 2>"$tmp/agent.err" &
track_agent $!
wait_healthz
timeout 30 python3 "$src/examples/grpo_loop.py" --url "http://127.0.0.1:$port" --steps 40 \
  --seconds-per-batch 0.15 >"$tmp/grpo.jsonl" 2>"$tmp/grpo.err"
check "the example loop ran 40 steps" test "$(wc -l < "$tmp/grpo.jsonl")" -eq 40
knobs=$(jq -s '[.[].gen_concurrency] | unique | length' "$tmp/grpo.jsonl")
check "the loop obeyed changing knobs ($knobs distinct gen_concurrency values)" test "$knobs" -gt 1
wait "$agent"; rc=$?; agent=
check "agent ran its $duration_s simulated seconds and exited 0 (rc=$rc)" test "$rc" -eq 0
missed=$(jq '.missed_ticks' "$tmp/agent.json")
check "agent summary: no fallback" test "$(jq '.fallbacks' "$tmp/agent.json")" -eq 0

rate_of() {  # rate_of TRACE_DIR [WINDOW_S]: the node's (one GPU) violation rate as analysed
  "$bin" analyze "$1" --budget-w "$budget_w" --scope node --windows "${2:-30}" --json |
    jq '.node.windows[0].violation_rate'
}
agent_rate=$(rate_of "$tmp/trace/seg-000001")
"$bin" eval "$scenario" --controllers "$controller" --seeds 5 --duration-s "$duration_s" \
  "${shield_flag[@]}" --out "$tmp/eval" --json >"$tmp/eval.json" 2>/dev/null
mean=$(jq '.controllers[0].violation_rate["30"].mean' "$tmp/eval.json")
ci=$(jq '.controllers[0].violation_rate["30"].ci95' "$tmp/eval.json")
seed1_dir=$(find "$tmp/eval" -type d -name "seed-$seed" | head -1)
seed1_rate=$(rate_of "$seed1_dir")
echo "agent seed $seed: 30 s violation rate $agent_rate (missed deadlines $missed)"
echo "eval seed $seed (analysed trace): $seed1_rate; eval seeds 1-5: $mean +- $ci (95 % CI)"
inside=$(jq -n "$agent_rate >= $mean - $ci - 1e-9 and $agent_rate <= $mean + $ci + 1e-9")
check "agent's rate within eval's 95 % CI" test "$inside" = true
same=$(jq -n "($agent_rate - $seed1_rate) | fabs < 1e-9")
check "same seed: the agent's 30 s rate is eval's ($missed deadlines missed and caught up)" \
  test "$same" = true
check "same seed: the agent's trace rows are eval's" \
  cmp -s "$tmp/trace/seg-000001/gpus.csv" "$seed1_dir/gpus.csv"
# The per-sample (0.5 s) rate, 1200 samples: a sharper like-for-like check than 20 windows of
# 30 s.
a05=$(rate_of "$tmp/trace/seg-000001" 0.5)
e05=$(rate_of "$seed1_dir" 0.5)
m05=$(jq '.controllers[0].violation_rate["0.5"].mean' "$tmp/eval.json")
c05=$(jq '.controllers[0].violation_rate["0.5"].ci95' "$tmp/eval.json")
echo "0.5 s windows: agent $a05, eval same seed $e05, eval seeds 1-5 $m05 +- $c05"
check "0.5 s rate: the agent's is eval's for the same seed" \
  test "$(jq -n "($a05 - $e05) | fabs < 1e-9")" = true
if [ -n "$out_json" ]; then
  jq -n --argjson a "$agent_rate" --argjson s "$seed1_rate" --argjson m "$mean" --argjson c "$ci" \
    --slurpfile sum "$tmp/agent.json" \
    '{scenario: "grpo-7b-a100", controller: "'"$controller"'", duration_s: '"$duration_s"', seed: '"$seed"',
      agent_seed_rate_30s: $a, eval_same_seed_rate_30s: $s, eval_seeds1to5_mean: $m,
      eval_seeds1to5_ci95: $c, rate_05s: {agent: '"$a05"', eval_same_seed: '"$e05"',
      eval_seeds1to5_mean: '"$m05"', eval_seeds1to5_ci95: '"$c05"'}, agent_summary: $sum[0]}' \
    >"$out_json"
fi
echo "fails=$fails"
[ "$fails" -eq 0 ]

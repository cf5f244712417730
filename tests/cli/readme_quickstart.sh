#!/usr/bin/env bash
# README's agent quick start ("The node agent: a budget held, then a job added"), run as written:
# the commands are read from README's first ```sh block after that heading, with two
# substitutions only, so that the test can run beside others: the port 9471 becomes a free port
# and /tmp/flexwatt-sim a scratch directory (in the commands and in a copy of
# deploy/agent-sim.yaml). `build/flexwatt` becomes the binary under test; `xdg-open URL` becomes a
# fetch of the page. It asserts, in real time:
#   - the cap controller holds the budget with no job registered: 30 s windows judged within
#     the first 2 minutes (at least 3), none over the budget;
#   - the knob controller PUT next cannot act (no job): the fallback is said in /v1/status
#     (no_actuator), /metrics (flexwatt_fallback_active 1) and the log, the budget still holds;
#   - the job the example loop registers ends the fallback, and the knob controller acts.
# Usage: readme_quickstart.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
source "$(dirname "$0")/lib/agent.sh"
command -v python3 >/dev/null || need_tool python3

mapfile -t cmds < <(awk '/^## The node agent: a budget held/ {on = 1; next}
  on && /^```sh/ {inblock = 1; next} inblock && /^```/ {exit} inblock {print}' "$src/README.md")
check "README's quick start has its 6 commands (${#cmds[@]})" test "${#cmds[@]}" -eq 6
sed -e "s|/tmp/flexwatt-sim|$tmp/sim|g" -e "s|9471|$port|g" "$src/deploy/agent-sim.yaml" \
  >"$tmp/agent-sim.yaml"
mkdir -p "$tmp/sim"
# cmd N: README's command N (1-based) with the substitutions above.
cmd() {
  local c=${cmds[$(($1 - 1))]}
  c=${c//9471/$port}
  c=${c//\/tmp\/flexwatt-sim/$tmp/sim}
  c=${c//deploy\/agent-sim.yaml/$tmp/agent-sim.yaml}
  c=${c//build\/flexwatt/$bin}
  c=${c//xdg-open /curl -sf -o $tmp/page.html }
  printf '%s' "$c"
}
api="http://127.0.0.1:$port"
status() { curl -s --max-time 2 "$api/v1/status"; }
cd "$src" || exit 1

# 1. The agent (backgrounded by the command itself).
check "command 1 starts the agent in the background" grep -q '&[[:space:]]*\(#.*\)\?$' <<<"$(cmd 1)"
eval "$(cmd 1)" 2>"$tmp/agent.err"
track_agent $!
start_s=$SECONDS
check "the agent answers" wait_healthz
eval "$(cmd 2)"
check "command 2: the dashboard page is served" grep -q 'flexwatt agent' "$tmp/page.html"
# 3. Windows within the first 2 minutes (at least 3 judged by ~95 s).
while [ $((SECONDS - start_s)) -lt 95 ]; do sleep 5; done
w=$(eval "$(cmd 3)")
check "command 3 prints the windows ($(jq -c '.[0] | {windows_total, violations_total}' <<<"$w"))" \
  jqt -e '.[0].window_s == 30' <<<"$w"
check "at least 3 windows of 30 s judged within 2 minutes" jqt -e '.[0].windows_total >= 3' <<<"$w"
check "none over the budget" jqt -e '.[0].violations_total == 0' <<<"$w"
check "the cap controller acted: the cap moved off the 400 W default" \
  jqt -e '[.gpus[].cap_w] | all(. < 400)' <<<"$(status)"
check "no fallback while the cap controller runs" jqt -e '.fallback_reason == ""' <<<"$(status)"

# 4-5. A knob controller with no job: it cannot act; the agent says so everywhere.
put=$(eval "$(cmd 4)")
check "command 4: the controller change is accepted ($put)" jqt -e '.accepted' <<<"$put"
reason=
for _ in $(seq 30); do
  reason=$(eval "$(cmd 5)")
  [ "$reason" = no_actuator ] && break
  sleep 0.2
done
check "the knob controller is in force" \
  jqt -e '.controller == "pid:knob=gen_concurrency"' <<<"$(status)"
check "command 5 prints no_actuator ($reason)" test "$reason" = no_actuator
check "/metrics: flexwatt_fallback_active 1" \
  grep -Eq '^flexwatt_fallback_active(\{[^}]*\})? 1$' <<<"$(curl -s "$api/metrics")"
check "the log says so" grep -q 'fallback to the safe setting: no_actuator' "$tmp/agent.err"
sleep 4
check "the safe caps hold the budget meanwhile" \
  jqt -e '.windows[0].violations_total == 0 and ([.gpus[].cap_w] | all(. <= 314.6 + 0.5))' \
  <<<"$(status)"

# 6. A job registers: the fallback ends, its knobs come under control.
eval "$(cmd 6)" >"$tmp/grpo.jsonl" 2>"$tmp/grpo.err"
loop=$!
ok=1
for _ in $(seq 100); do
  s=$(status)
  if jq -e '.fallback_reason == "" and (.jobs | length) == 1' <<<"$s" >/dev/null 2>&1; then
    ok=0
    break
  fi
  sleep 0.2
done
check "command 6: the job registered and the fallback ended" test $ok -eq 0
# Until the job has had new knobs (its lines show two gen_concurrency values), at most ~20 s: on a
# loaded machine the job's first lines can all come before the controller's first change.
knobs=0
for _ in $(seq 100); do
  knobs=$(jq -s '[.[].gen_concurrency] | unique | length' "$tmp/grpo.jsonl" 2>/dev/null)
  [ "$(wc -l <"$tmp/grpo.jsonl")" -ge 5 ] && [ "${knobs:-0}" -gt 1 ] && break
  sleep 0.2
done
check "the knob controller hands the job new knobs ($knobs distinct gen_concurrency values)" \
  test "${knobs:-0}" -gt 1
kill "$loop" 2>/dev/null
wait "$loop" 2>/dev/null
check "the budget held throughout" jqt -e '.windows[0].violations_total == 0' <<<"$(status)"
kill -TERM "$agent"
wait "$agent"
rc=$?
agent=
check "the agent exits 0 and restores (rc=$rc)" test "$rc" -eq 0
finish readme_quickstart

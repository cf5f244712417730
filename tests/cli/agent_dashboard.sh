#!/usr/bin/env bash
# The agent's dashboard (GET /) in headless Chromium. 1. An agent on the sim backend with a
# knob controller: the page loads the agent's history ring (GET /v1/history) before its own
# polls, shows the span choices, the budget with its source, per-GPU power and cap in the
# legend, a jobs table with a header and integer knobs, each job's tokens and knobs over time
# (history columns and two plots), and no visible debug line (#status is hidden). 2. An agent on the fake NVML library (a real node's path) with a knob controller and
# no job: the page says in words why the controller cannot act. With FLEXWATT_SHOT_DIR set,
# saves dashboard-agent.png there (docs/ keeps the one checked by eye).
# Usage: agent_dashboard.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
fake=$(dirname "$bin")/tests/telemetry/fake_nvml/libnvidia-ml.so.1
source "$(dirname "$0")/lib/agent.sh"
source "$(dirname "$0")/lib/browser.sh"
cat > "$tmp/agent.yaml" <<YAML
backend: sim:$src/scenarios/grpo-7b-a100.yaml
period_s: 0.1
controller: pid:knob=gen_concurrency
$agent_local
YAML
duration_s=40
[ -n "${FLEXWATT_SHOT_DIR:-}" ] && duration_s=120
"$bin" agent --config "$tmp/agent.yaml" --duration-s "$duration_s" >/dev/null 2>"$tmp/agent.err" &
track_agent $!
check "the agent answers" wait_healthz
api="http://127.0.0.1:$port"
sleep 4  # a few seconds of history (the ring keeps one sample per 0.5 s)
check "GET /v1/history answers" curl -sf -o "$tmp/history.json" "$api/v1/history?span_s=60"
check "GET /v1/history answers the ring ($(jq -c .count "$tmp/history.json" 2>/dev/null))" \
  jqt -s 'length == 1 and (.[0] | .count >= 5 and (.t_unix_s | length) == .count and (.gpus | length) >= 1
       and (.gpus[0].cap_w | length) == .count)' "$tmp/history.json"
check "GET /v1/history refuses a span over an hour" \
  test "$(curl -s -o /dev/null -w '%{http_code}' "$api/v1/history?span_s=7200")" = 422

# page URL OUT: the DOM in OUT and, without its script, in OUT.body (what a user reads).
page() {
  dump_dom "$1" "$2"
  perl -0pe 's/<script.*?<\/script>//gs' "$2" >"$2.body"
}
page "$api/?static=1&span_s=60" "$tmp/dom.html"
st=$(status_of "$tmp/dom.html")
check "the page drew (status '$st')" grep -Eq '^ok points=[0-9]+ span_s=60' <<<"$st"
points=$(sed -E 's/^ok points=([0-9]+).*/\1/' <<<"$st")
# 3 polls of /v1/status alone give at most 3 points: more means the history was loaded.
check "the page starts from the agent's history (points=$points > 3)" test "${points:-0}" -gt 3
check "the status line is hidden from users" grep -q '<div id="status" hidden="">' "$tmp/dom.html"
check "the page has the plot canvas with axis titles" \
  grep -q '<canvas id="plot"[^>]*aria-label="power (W) against time before now' "$tmp/dom.html"
for s in '1 min' '15 min' '1 h'; do
  check "span choice '$s'" grep -q "data-span=\"[0-9]*\"[^>]*>$s</button>" "$tmp/dom.html"
done
check "the budget names its source" grep -q 'set by <b>config</b>' "$tmp/dom.html.body"
check "the page shows the controller" grep -q 'pid:knob=gen_concurrency' "$tmp/dom.html.body"
# No job registered yet: on the sim backend, as on hardware, the knob controller cannot act.
check "the fallback state in words: the knob controller cannot act" \
  grep -q 'no registered job exposes one of them, so it cannot act' "$tmp/dom.html.body"
check "the page says the node is simulated and what a registered job stands for" \
  grep -q 'SIMULATED node.*the tokens and steps shown for it are the simulated job' "$tmp/dom.html.body"
check "an empty jobs table says the simulated job's knobs are out of reach" \
  grep -q "its knobs are out of the controller's reach until a job registers" "$tmp/dom.html.body"
check "GPU power and cap lines in the legend" grep -q 'GPU 0 cap</span>' "$tmp/dom.html.body"
check "the jobs table has a header" \
  grep -q '<thead><tr><th>job</th>.*<th>knobs</th>' "$tmp/dom.html.body"
check "the page needs no network" test "$(grep -Ec 'https?://' "$tmp/dom.html")" -eq 0

# A job with a knob: the fallback clears and its knobs show as integers.
curl -sf -X POST "$api/v1/jobs" -d '{"id": "grpo-7b", "kind": "grpo",
  "knobs": {"gen_concurrency": {"min": 8, "max": 256, "step": 8, "default": 64}}}' >/dev/null
check "the job registered" test $? -eq 0
for _ in 1 2 3 4 5; do
  curl -sf -X POST "$api/v1/jobs/grpo-7b/progress" \
    -d "{\"tokens_total\": $((RANDOM * 100)), \"steps_total\": 3, \"phase\": \"generate\"}" >/dev/null
  sleep 0.3
done
curl -sf -X POST "$api/v1/jobs/grpo-7b/progress" -d '{"tokens_total": 4000000, "steps_total": 4,
  "phase": "generate"}' >/dev/null
page "$api/?static=1&span_s=60" "$tmp/dom2.html"
check "the job's row shows its knob as an integer" \
  grep -Eq '<td>grpo-7b</td>.*<td>gen_concurrency = [0-9]+</td>' "$tmp/dom2.html.body"
check "the fallback is over once the job registered" \
  grep -q "none: the controller's commands are in force" "$tmp/dom2.html.body"
check "no knob written as a float" \
  test "$(grep -Ec 'gen_concurrency = [0-9]+\.[0-9]' "$tmp/dom2.html.body")" -eq 0
# Jobs over time (#31): the ring keeps each job's progress and knobs; the page plots both.
check "GET /v1/history has the job's columns" curl -sf -o "$tmp/history2.json" "$api/v1/history?span_s=60"
check "... tokens and the knob in force per sample" \
  jqt -s '.[0] | (.jobs | map(.id) | index("grpo-7b")) != null and
          (.jobs[] | select(.id == "grpo-7b") | (.tokens_total | length) == (.knobs.gen_concurrency | length)
           and ([.tokens_total[] | select(. != null)] | length) >= 2)' "$tmp/history2.json"
st2=$(status_of "$tmp/dom2.html")
check "the jobs-over-time plots drew ($st2)" grep -Eq 'job_points=[1-9][0-9]*' <<<"$st2"
check "the job tokens plot has its axis titles" \
  grep -q '<canvas id="job-tokens"[^>]*aria-label="tokens (completed or not) against time before now' "$tmp/dom2.html"
check "the knob plot has its axis titles" \
  grep -q '<canvas id="job-knobs"[^>]*aria-label="knob setting in force against time before now' "$tmp/dom2.html"
check "the legend names the job's tokens and knob" \
  grep -q 'grpo-7b tokens</span>' "$tmp/dom2.html.body"
check "... and the knob" grep -q 'grpo-7b gen_concurrency</span>' "$tmp/dom2.html.body"
if [ -n "${FLEXWATT_SHOT_DIR:-}" ]; then
  # About a minute of history with a demand-response event (a lower budget now, and a schedule).
  for i in $(seq 50); do
    curl -sf -X POST "$api/v1/jobs/grpo-7b/progress" \
      -d "{\"tokens_total\": $((4000000 + i * 50000)), \"steps_total\": $((4 + i / 8)),
           \"phase\": \"generate\"}" >/dev/null
    [ "$i" = 25 ] && curl -sf -X PUT "$api/v1/budget" -d '{"watts": 200, "window_s": 10,
      "schedule": [{"after_s": 600, "watts": 280}]}' >/dev/null
    sleep 1
  done
  screenshot "$api/?static=1&span_s=60" "$FLEXWATT_SHOT_DIR/dashboard-agent.png" 1280,1500
  check "the screenshot was written" test -s "$FLEXWATT_SHOT_DIR/dashboard-agent.png"
fi
kill -TERM "$agent"; wait "$agent"; agent=

# 2. A knob controller on a node with no job registered (fake NVML: the real node's path).
[ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
printf 'gpus 2\npower * 300\nlimits * min=100 max=400 default=400 enforced=350 limit=350\n' \
  >"$tmp/script.txt"
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
node_local=${agent_local//agent.lock/node.lock}
node_local=${node_local//saved.json/node-saved.json}
cat > "$tmp/node.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: pid:knob=gen_concurrency
budget_w: 500
$node_local
YAML
"$bin" agent --config "$tmp/node.yaml" --duration-s 20 >/dev/null 2>"$tmp/node.err" &
track_agent $!
check "the node agent answers" wait_healthz
sleep 1
page "$api/?static=1&span_s=60" "$tmp/node.html"
check "the status names the fallback ($(status_of "$tmp/node.html"))" \
  grep -q 'fallback=no_actuator' <<<"$(status_of "$tmp/node.html")"
check "a knob controller without a job says why it cannot act" \
  grep -q 'no registered job exposes one of them, so it cannot act' "$tmp/node.html.body"
check "and what holds the budget meanwhile" \
  grep -q 'the safe caps are in force until such a job registers' "$tmp/node.html.body"
check "an empty jobs table says so" grep -q 'no jobs registered' "$tmp/node.html.body"
kill -TERM "$agent"; wait "$agent"; agent=
finish agent_dashboard

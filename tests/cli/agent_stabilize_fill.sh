#!/usr/bin/env bash
# The fill hook on hardware semantics (issue #48): flexwatt agent on the fake NVML library's two
# B200s. The fill workload is the job client's: a job declares it when it registers
# ("fill": true), and the agent hands it its GPUs' fill targets with its knobs ("fill_w").
#  1. stabilize with its pre-start fill (pre_fill=on, the default) is refused (422, naming the
#     fill hook) while no job declares one; "fill": "yes" is 400 naming the field;
#  2. a job registers with "fill": true (its status says so); stabilize is then accepted;
#  3. the job announces its start 10 s ahead while idle: the agent asks it to fill both GPUs
#     (fill_w > 0 on GPU 0 and 1, in GET /v1/jobs/pt/knobs and the progress answer);
#  4. the job starts training: the fill targets go back to 0;
#  5. the Python client's unit tests of the hook (clients/python/test_fill_hook.py).
# Every wait is bounded (about 10 s in all).
# Usage: agent_stabilize_fill.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=lib/agent.sh
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
fails=${fails:?}  # lib/common.sh's failure count (set through lib/agent.sh)
api="http://127.0.0.1:$port"
fill_of() {  # fill_of: the job's fill targets as "GPU:W ..." from GET /v1/jobs/pt/knobs
  curl -s --max-time 2 "$api/v1/jobs/pt/knobs" |
    jq -r '.fill_w // {} | to_entries | map("\(.key):\(.value)") | join(" ")'
}
wait_fill() {  # wait_fill SECONDS JQ: until the targets (an object) satisfy the jq test
  local n=$(($1 * 10)) f
  for _ in $(seq "$n"); do
    f=$(curl -s --max-time 2 "$api/v1/jobs/pt/knobs")
    jq -e ".fill_w | $2" <<<"$f" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "  fill targets '$(fill_of)', want $2"
  return 1
}

check "agent starts on 2 B200s with stabilize:pre_fill=off" \
  start_b200_agent 200 stabilize:pre_fill=off

# 1. No job with a fill hook: the pre-start fill is refused up front.
code=$(api_send PUT /v1/controller '{"controller": "stabilize"}')
check "1: stabilize (pre_fill=on) without a fill hook is 422 ($code)" test "$code" = 422
check "1: ... naming the hook" grep -q 'fill hook' "$tmp/body"
code=$(api_send POST /v1/jobs '{"id": "pt", "gpus": [0, 1], "fill": "yes"}')
check "1: \"fill\": \"yes\" is 400 ($code)" test "$code" = 400
check "1: ... naming the field" grep -q '"fill: ' "$tmp/body"

# 2. A job with the hook.
code=$(api_send POST /v1/jobs '{"id": "pt", "kind": "pretrain", "gpus": [0, 1], "fill": true}')
check "2: a job registers with \"fill\": true ($code)" test "$code" = 201
check "2: ... its registration says so" jqt '.fill == true and .fill_w == {}' "$tmp/body"
accepted() { [ "$(api_send PUT /v1/controller '{"controller": "stabilize"}')" = 202 ]; }
retry_accepted() { for _ in $(seq 20); do accepted && return 0; sleep 0.1; done; return 1; }
check "2: stabilize (pre_fill=on) is accepted once the loop has seen the job" retry_accepted

# 3. Idle, the start announced 10 s ahead: the pre-start fill.
code=$(api_send POST /v1/jobs/pt/progress '{"tokens_total": 0, "steps_total": 0, "phase": "idle",
  "starts_in_s": 10}')
check "3: the start announced ($code)" test "$code" = 200
check "3: both GPUs get a fill target above 0" wait_fill 5 '(."0" > 0) and (."1" > 0)'
code=$(api_send POST /v1/jobs/pt/progress '{"tokens_total": 0, "steps_total": 0, "phase": "idle",
  "starts_in_s": 9}')
check "3: the progress answer carries them ($code)" \
  jqt '(.fill_w."0" > 0) and (.fill_w."1" > 0)' "$tmp/body"

# 4. Training: the fill stops.
code=$(api_send POST /v1/jobs/pt/progress '{"tokens_total": 1, "steps_total": 1, "phase": "forward"}')
check "4: training reported ($code)" test "$code" = 200
check "4: the fill targets go back to 0" wait_fill 5 '(."0" == 0) and (."1" == 0)'

stop_agent_checked

# 5. The client's hook.
command -v python3 >/dev/null || need_tool python3
check "5: the Python client's fill hook tests pass" \
  python3 "$src/clients/python/test_fill_hook.py" -q
finish agent_stabilize_fill

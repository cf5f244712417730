#!/usr/bin/env bash
# flexwatt agent running `stabilize:pre_fill=off` (issue #48) on the fake NVML library's two
# B200s, fed by what the job announces with its progress reports (POST /v1/jobs/{id}/progress:
# starts_in_s, ends_in_s, checkpoint_in_iters, checkpoint_s). The fake's state file holds what
# the driver holds: "P smoothing_profile K FLOOR_PCT UP_W_PER_S DOWN_W_PER_S HYST_MS".
#  1. a training job with nothing announced: steady (floor 50 %, no ramp limit: 100000 W/s);
#  2. bad announcements are 422/400 naming the field, nothing of the report applied;
#  3. checkpoint_in_iters 1, checkpoint_s 10: the hold level before a checkpoint (floor 85 %,
#     ramp-down 50 W/s) on both GPUs; /v1/status shows the announcement; the next report
#     without it: steady again;
#  4. ends_in_s 6 (a stop further ahead than pre_s, 3 s): steady at first, the agent ages it
#     (/v1/status shows less time left) and holds once 3 s are left: about 3 s later;
#  5. the Python client's unit tests of the same fields (clients/python).
# Every wait is bounded (about 10 s in all).
# Usage: agent_stabilize_announcements.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=lib/agent.sh
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
fails=${fails:?}  # lib/common.sh's failure count (set through lib/agent.sh)
api="http://127.0.0.1:$port"
status() { curl -s --max-time 2 "$api/v1/status"; }
post() { api_send POST "$1" "$2"; }  # post PATH BODY: the HTTP code; the body in $tmp/body
smoothing() { { grep smoothing_profile "$tmp/state.txt" | tr '\n' '|'; } 2>/dev/null; }
has() {  # has TEXT PATTERN...: every pattern is one of TEXT's |-separated lines
  local text=$1 p
  shift
  for p in "$@"; do [[ "$text" == *"|$p|"* ]] || return 1; done
}
wait_smoothing() {  # wait_smoothing SECONDS PATTERN...: until every pattern is held
  local n=$(($1 * 10))
  shift
  for _ in $(seq "$n"); do
    has "|$(smoothing)" "$@" && return 0
    sleep 0.1
  done
  echo "  smoothing '$(smoothing)', want $*"
  return 1
}
steady0="0 smoothing_profile 0 50 100000 100000 0" steady1="1 smoothing_profile 0 50 100000 100000 0"
hold0="0 smoothing_profile 0 85 100000 50 0" hold1="1 smoothing_profile 0 85 100000 50 0"

check "agent starts on 2 B200s with stabilize:pre_fill=off" \
  start_b200_agent 900 stabilize:pre_fill=off

# 1. Training, nothing announced.
code=$(post /v1/jobs '{"id": "pt", "kind": "pretrain", "gpus": [0, 1]}')
check "1: a job registers ($code)" test "$code" = 201
code=$(post /v1/jobs/pt/progress '{"tokens_total": 1, "steps_total": 1, "phase": "forward"}')
check "1: ... reports training ($code)" test "$code" = 200
check "1: steady: floor 50 %, no ramp limit" wait_smoothing 5 "$steady0" "$steady1"

# 2. Bad announcements: refused naming the field, nothing applied.
code=$(post /v1/jobs/pt/progress \
  '{"tokens_total": 5, "steps_total": 5, "phase": "forward", "checkpoint_in_iters": 0}')
check "2: checkpoint_in_iters 0 is 422 ($code)" test "$code" = 422
check "2: ... naming the field" grep -q '"checkpoint_in_iters: ' "$tmp/body"
code=$(post /v1/jobs/pt/progress \
  '{"tokens_total": 5, "steps_total": 5, "checkpoint_in_iters": 1.5}')
check "2: checkpoint_in_iters 1.5 is 422 ($code)" test "$code" = 422
code=$(post /v1/jobs/pt/progress '{"tokens_total": 5, "steps_total": 5, "ends_in_s": -1}')
check "2: ends_in_s -1 is 422 ($code)" test "$code" = 422
check "2: ... naming the field" grep -q '"ends_in_s: ' "$tmp/body"
code=$(post /v1/jobs/pt/progress '{"tokens_total": 5, "steps_total": 5, "starts_in_s": "soon"}')
check "2: starts_in_s \"soon\" is 400 ($code)" test "$code" = 400
code=$(post /v1/jobs/pt/progress '{"tokens_total": 5, "steps_total": 5, "checkpoint_in_s": 3}')
check "2: an unknown field is still 422 ($code)" test "$code" = 422
status > "$tmp/s2.json"
check "2: nothing of the refused reports applied" \
  jqt '.jobs[0].steps_total == 1 and .jobs[0].announced.checkpoint_in_iters == null' "$tmp/s2.json"

# 3. A checkpoint after the iteration under way.
code=$(post /v1/jobs/pt/progress '{"tokens_total": 2, "steps_total": 2, "phase": "forward",
  "checkpoint_in_iters": 1, "checkpoint_s": 10}')
check "3: the checkpoint announced ($code)" test "$code" = 200
check "3: hold before the checkpoint: floor 85 %, ramp-down 50 W/s" \
  wait_smoothing 5 "$hold0" "$hold1"
status > "$tmp/s3.json"
check "3: status shows the announcement" \
  jqt '.jobs[0].announced == {"starts_in_s": null, "ends_in_s": null, "checkpoint_in_iters": 1, "checkpoint_s": 10, "step_age_s": null}' \
  "$tmp/s3.json"
code=$(post /v1/jobs/pt/progress '{"tokens_total": 3, "steps_total": 3, "phase": "forward"}')
check "3: a report without it ($code)" test "$code" = 200
check "3: ... steady again" wait_smoothing 5 "$steady0" "$steady1"

# 4. A stop 6 s ahead: aged by the agent, held once 3 s are left.
t0=$(date +%s.%N)
code=$(post /v1/jobs/pt/progress \
  '{"tokens_total": 4, "steps_total": 4, "phase": "forward", "ends_in_s": 6}')
check "4: the stop announced ($code)" test "$code" = 200
sleep 0.5
held="|$(smoothing)"
if awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a < 2.5) }'; then
  check "4: 6 s ahead: still steady ($held)" has "$held" "$steady0" "$steady1"
else
  echo "  (4: the machine took over 2.5 s; the steady check is skipped)"
fi
sleep 0.5
status > "$tmp/s4.json"
# Over 1 s after the report; the status is the last tick's (0.1 s), so at most 5.1 s left.
check "4: status shows the time left shrinking ($(jq -c .jobs[0].announced "$tmp/s4.json"))" \
  jqt '.jobs[0].announced.ends_in_s <= 5.5 and .jobs[0].announced.ends_in_s >= 0' "$tmp/s4.json"
check "4: hold once 3 s are left" wait_smoothing 8 "$hold0" "$hold1"

stop_agent_checked

# 5. The Python client's side.
command -v python3 >/dev/null || need_tool python3
check "5: the client's unit tests" \
  python3 "$src/clients/python/test_progress_announcements.py" -q

finish agent_stabilize_announcements

#!/usr/bin/env bash
# flexwatt agent running `stabilize` (issue #48) on NVML semantics, against the fake NVML
# library's Blackwell profile (tests/telemetry/fake_nvml: b200 has power smoothing, TMP ceiling
# 1000 W, placeholder settings floor 20 %, up 500, down 250 W/s, hysteresis 1000 ms, off; h100
# has none). The fake's state file holds what the driver holds: "P smoothing ENABLED ACTIVE" and
# "P smoothing_profile K FLOOR_PCT UP_W_PER_S DOWN_W_PER_S HYST_MS" once a GPU's smoothing was
# set.
#  1. two B200s: `stabilize` (pre_fill=on, the default) is refused at PUT (422: the NVML plant
#     runs no fill workload); `stabilize:pre_fill=off` is taken: with no job the node is idle
#     (the "before" mode: floor 85 %, ramp up 15, down 50 W/s, no hysteresis) and the fake holds
#     exactly that on both GPUs, /v1/status reports it; a registered job that reports a
#     training phase moves it to steady (floor 50 %, no ramp limit: the TMP ceiling per 10 ms,
#     100000 W/s); the restore file records the settings found; switching to `uncontrolled`
#     puts them back; back on stabilize, SIGTERM puts them back and removes the restore file.
#  2. kill -9 while stabilize runs: `flexwatt agent --restore` puts the smoothing found back
#     from the restore file.
#  3. a B200 beside an H100: `stabilize:pre_fill=off` is refused at PUT (422 naming the H100)
#     and at start (exit 2); status reports no smoothing on the H100; nothing is written.
# Every wait is bounded (a few seconds in all).
# Usage: agent_stabilize_nvml.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
# shellcheck source=lib/agent.sh
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
fails=${fails:?}  # lib/common.sh's failure count (set through lib/agent.sh)
api="http://127.0.0.1:$port"
status() { curl -s --max-time 2 "$api/v1/status"; }
put() {  # put PATH BODY: the HTTP code; the body in $tmp/body
  curl -s -o "$tmp/body" -w '%{http_code}' --max-time 3 -X PUT \
    -H 'Content-Type: application/json' "$api$1" --data-binary "$2"
}
post() { curl -sf -o /dev/null --max-time 3 -X POST "$api$1" --data-binary "$2"; }
smoothing() { { grep smoothing "$tmp/state.txt" | tr '\n' '|'; } 2>/dev/null; }
wait_smoothing() {  # wait_smoothing PATTERN...: waits (<= 5 s) until every pattern is held
  local p ok
  for _ in $(seq 50); do
    ok=1
    for p in "$@"; do [[ "|$(smoothing)" == *"|$p|"* ]] || ok=0; done
    [ "$ok" = 1 ] && return 0
    sleep 0.1
  done
  echo "  smoothing '$(smoothing)', want $*"
  return 1
}
config() {  # config CONTROLLER
  cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: $1
budget_w: 2000
$agent_local
YAML
}
start_agent() {  # start_agent NAME
  "$bin" agent --config "$tmp/agent.yaml" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  track_agent $!
  wait_healthz || { echo "  $1 never answered; stderr: $(tail -3 "$tmp/$1.err")"; return 1; }
}
stop_agent() {  # stop_agent: SIGTERM, waits (<= 10 s); sets $rc
  kill -TERM "$agent"
  for _ in $(seq 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  wait "$agent" 2>/dev/null; rc=$?
}
found0="0 smoothing 0 0" found0p="0 smoothing_profile 0 20 500 250 1000"
found1="1 smoothing 0 0" found1p="1 smoothing_profile 0 20 500 250 1000"
on0="0 smoothing 1 0" on1="1 smoothing 1 0"

# 1. Two B200s.
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
profile * b200
power * 900
writes * any
SCRIPT
config uncontrolled
check "1: agent starts on 2 B200s" start_agent b200
status > "$tmp/s0.json"
check "1: status reports the smoothing found" \
  jqt '[.gpus[].smoothing | .enabled == false and .floor_pct == 20 and .ramp_up_w_per_s == 500] == [true, true]' "$tmp/s0.json"
check "1: the restore file records it by UUID" \
  jqt '[.smoothing[] | (.uuid | startswith("GPU-")) and .floor_pct == 20 and .enabled == false] == [true, true]' "$tmp/saved.json"
code=$(put /v1/controller '{"controller":"stabilize"}')
check "1: stabilize with the pre-start fill is 422 ($code)" test "$code" = 422
check "1: ... naming the way out" grep -q "pre_fill=off" "$tmp/body"
code=$(put /v1/controller '{"controller":"stabilize:pre_fill=off"}')
check "1: stabilize:pre_fill=off is taken ($code)" test "$code" = 202
check "1: idle node: floor 85 %, up 15, down 50 W/s on both GPUs" wait_smoothing \
  "$on0" "0 smoothing_profile 0 85 15 50 0" "$on1" "1 smoothing_profile 0 85 15 50 0"
sleep 0.3
status > "$tmp/s1.json"
check "1: status reports the settings in force" \
  jqt '[.gpus[].smoothing | .enabled and .floor_pct == 85 and .ramp_up_w_per_s == 15 and .ramp_down_w_per_s == 50 and .hysteresis_ms == 0] == [true, true]' "$tmp/s1.json"
check "1: no fallback, no failed write" \
  jqt '.fallback_reason == "" and .controller == "stabilize:pre_fill=off"' "$tmp/s1.json"
check "1: a job registers" post /v1/jobs '{"id": "pt", "kind": "pretrain", "gpus": [0, 1]}'
check "1: ... and reports training" \
  post /v1/jobs/pt/progress '{"tokens_total": 1, "steps_total": 1, "phase": "forward"}'
check "1: steady: floor 50 %, no ramp limit (1000 W per 10 ms)" wait_smoothing \
  "0 smoothing_profile 0 50 100000 100000 0" "1 smoothing_profile 0 50 100000 100000 0"
code=$(put /v1/controller '{"controller":"uncontrolled"}')
check "1: switch to uncontrolled ($code)" test "$code" = 202
check "1: the switch puts the smoothing found back" wait_smoothing \
  "$found0" "$found0p" "$found1" "$found1p"
code=$(put /v1/controller '{"controller":"stabilize:pre_fill=off"}')
check "1: back on stabilize ($code)" test "$code" = 202
check "1: ... steady again" wait_smoothing "$on0" "0 smoothing_profile 0 50 100000 100000 0"
stop_agent
check "1: SIGTERM exits 0 (rc $rc)" test "$rc" = 0
check "1: SIGTERM puts the smoothing found back" wait_smoothing \
  "$found0" "$found0p" "$found1" "$found1p"
check "1: the restore file is removed" test ! -e "$tmp/saved.json"
[ "$fails" -eq 0 ] || tail -5 "$tmp/b200.err"

# 2. kill -9, then --restore from the restore file.
config "stabilize:pre_fill=off"
check "2: agent starts with stabilize" start_agent killed
check "2: settings written" wait_smoothing "$on0" "0 smoothing_profile 0 85 15 50 0"
kill -9 "$agent"; wait "$agent" 2>/dev/null
out=$("$bin" agent --config "$tmp/agent.yaml" --restore 2>&1); rc=$?
check "2: --restore exits 0 ($out)" test "$rc" = 0
check "2: ... saying so" grep -q "power smoothing of 2 GPUs" <<<"$out"
check "2: --restore puts the smoothing found back" wait_smoothing \
  "$found0" "$found0p" "$found1" "$found1p"

# 3. A B200 beside an H100.
rm -f "$tmp/state.txt"
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
profile 0 b200
profile 1 h100
power * 600
writes * any
SCRIPT
config uncontrolled
check "3: agent starts on a B200 and an H100" start_agent mixed
code=$(put /v1/controller '{"controller":"stabilize:pre_fill=off"}')
check "3: stabilize is 422 ($code)" test "$code" = 422
check "3: ... naming the H100" grep -q "GPU 1 (NVIDIA H100 80GB HBM3)" "$tmp/body"
status > "$tmp/s3.json"
check "3: no smoothing reported on the H100" \
  jqt '(.gpus[1].smoothing == null) and (.gpus[0].smoothing.floor_pct == 20) and .controller == "uncontrolled"' "$tmp/s3.json"
stop_agent
check "3: stop exits 0 (rc $rc)" test "$rc" = 0
config "stabilize:pre_fill=off"
err=$("$bin" agent --config "$tmp/agent.yaml" 2>&1 >/dev/null); rc=$?
check "3: a start with stabilize exits 2 (got $rc)" test "$rc" = 2
check "3: ... naming the H100" grep -q "GPU 1 (NVIDIA H100 80GB HBM3)" <<<"$err"
check "3: nothing was written" test -z "$(smoothing)"

[ "$fails" -eq 0 ] || { cat "$tmp/body" 2>/dev/null; tail -5 "$tmp/mixed.err"; }
finish agent_stabilize_nvml

# Shared set-up of the agent's end-to-end tests (tests/cli/agent_*.sh, sweep_agent.sh), on top
# of common.sh (check, jqt, finish). Sourcing it sets $tmp (a scratch directory) and $port (a
# random loopback TCP port for the agent), and traps EXIT to kill, by PID, every agent passed to
# track_agent and to remove $tmp.

source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
tmp=$(mktemp -d)
# Below Linux's ephemeral range (32768-60999), where outgoing connections of other tests that
# run at the same time take their local ports.
port=$((20000 + RANDOM % 12000))
# The agent config lines every test shares: restore file and lock in $tmp, the API on a Unix
# socket in $tmp and on $port. `server:` comes last, so a test may add server keys after it.
agent_local="restore_file: $tmp/saved.json
lock_file: $tmp/agent.lock
server:
  unix_socket: $tmp/agent.sock
  tcp_port: $port"
agent=
agent_pids=()
agent_cleanup() {
  for p in "${agent_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap agent_cleanup EXIT

# track_agent PID: an agent started in the background; sets $agent; it is killed on exit.
track_agent() {
  agent=$1
  agent_pids+=("$1")
}

# wait_healthz: waits (at most ~5 s) until the agent on $port answers /healthz; 1 if it never did.
wait_healthz() {
  for _ in $(seq 50); do
    curl -sf --max-time 1 "http://127.0.0.1:$port/healthz" >/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# use_fake_nvml: the agent tests on the fake NVML library (tests/telemetry/fake_nvml) built beside
# $bin: sets $fake to its path (the test fails when it is not built) and points
# FAKE_NVML_SCRIPT and FAKE_NVML_STATE at script.txt and state.txt in $tmp.
use_fake_nvml() {
  fake=$(dirname "$bin")/tests/telemetry/fake_nvml/libnvidia-ml.so.1
  [ -f "$fake" ] || { echo "FAIL: fake NVML library not built at $fake"; exit 1; }
  export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
}

# start_b200_agent POWER_W CONTROLLER: an agent (period 0.1 s, node budget 2000 W) on the fake
# NVML library's two B200s drawing POWER_W each (use_fake_nvml first), running CONTROLLER;
# tracked; 1 when it does not answer /healthz.
start_b200_agent() {
  printf 'gpus 2\nprofile * b200\npower * %s\nwrites * any\n' "$1" >"$tmp/script.txt"
  cat >"$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: $2
budget_w: 2000
$agent_local
YAML
  "$bin" agent --config "$tmp/agent.yaml" >"$tmp/agent.out" 2>"$tmp/agent.err" &
  track_agent $!
  wait_healthz
}

# stop_agent_checked: SIGTERM to $agent, waits (at most ~10 s), checks it exits 0; on any failure
# so far prints $tmp/body and the agent's last log lines.
stop_agent_checked() {
  local rc
  kill -TERM "$agent"
  for _ in $(seq 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  wait "$agent" 2>/dev/null; rc=$?
  check "SIGTERM exits 0 (rc $rc)" test "$rc" = 0
  [ "$fails" -eq 0 ] || { cat "$tmp/body"; tail -5 "$tmp/agent.err"; }
}

# api_send METHOD PATH BODY: a JSON request to the agent on $port; prints the HTTP code, the
# answer's body in $tmp/body.
api_send() {
  curl -s -o "$tmp/body" -w '%{http_code}' --max-time 3 -X "$1" \
    -H 'Content-Type: application/json' "http://127.0.0.1:$port$2" --data-binary "$3"
}

# use_torch_python: sets py to the first Python that imports torch ($PYTHON, python3 on PATH,
# Debian's /usr/bin/python3). Without one: under CI=true the test fails (exit 1), else it is
# skipped (exit 0) — make deps installs python3-torch.
use_torch_python() {
  py=
  local c
  for c in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$c" >/dev/null && "$c" -c 'import torch' 2>/dev/null; then py=$c; break; fi
  done
  if [ -z "$py" ]; then
    if [ "${CI:-}" = true ]; then echo "FAIL: PyTorch missing (make deps installs python3-torch)"; exit 1; fi
    echo "skip: PyTorch not installed (make deps installs python3-torch)"; exit 0
  fi
}

# The controller and caps of the agent on $port (the pipeline-plan tests):
# put_controller SPEC: PUT /v1/controller; the HTTP status in $code, the answer in $tmp/put.json.
put_controller() {
  code=$(curl -s -o "$tmp/put.json" -w '%{http_code}' --max-time 30 -X PUT \
    "http://127.0.0.1:$port/v1/controller" -d "$(jq -cn --arg c "$1" '{controller: $c}')")
}
# status: the agent's /v1/status in $tmp/status.json.
status() { curl -s --max-time 2 "http://127.0.0.1:$port/v1/status" >"$tmp/status.json"; }
# wait_status_caps WANT: until /v1/status's caps (per GPU, in index order, to 0.1 W) equal the
# JSON array WANT (at most ~20 s; the caps are read back from the plant); 1 if they never did.
wait_status_caps() {
  jq -e 'type == "array"' <<<"$1" >/dev/null 2>&1 || { echo "  no caps to wait for: '$1'"; return 1; }
  for _ in $(seq 200); do
    status
    jq -e --argjson w "$1" '[.gpus | sort_by(.index)[] | .cap_w | . * 10 | round / 10] == $w' \
      "$tmp/status.json" >/dev/null && return 0
    sleep 0.1
  done
  echo "  caps: $(jq -c '[.gpus | sort_by(.index)[] | .cap_w]' "$tmp/status.json"), want $1"
  return 1
}
# sigterm_restores LOG...: the agent ($agent) holds a restore file; SIGTERM exits 0, the log says
# the caps were restored and the restore file is gone; on a failure the agent's and LOGs' last
# lines. Clears $agent.
sigterm_restores() {
  local rc
  check "the restore file holds the caps found at start" test -s "$tmp/saved.json"
  kill -TERM "$agent"
  wait "$agent"
  rc=$?
  check "SIGTERM: exit 0 ($rc)" test "$rc" -eq 0
  check "the agent restored the caps" grep -q "caps restored" "$tmp/agent.err"
  check "and removed its restore file" test ! -e "$tmp/saved.json"
  explain_process agent "$agent" "$tmp/agent.err" "$@"
  agent=
}

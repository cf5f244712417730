#!/usr/bin/env bash
# flexwatt agent safety on the fake NVML library, as an operator's node drives it: 4 GPUs
# (min 100, max 400, default 400) with 350 W found at start, caps kept across processes through
# FAKE_NVML_STATE. Caps move only by the controller, the limiter or a restore: a job on some
# GPUs leaves the others alone, an unknown GPU index is refused, a knob controller never lifts
# a cap above the one found; ordinary job traffic (register, progress, delete from 4 clients)
# keeps the agent alive; every catchable exit (TERM, HUP, USR1, USR2, ABRT, QUIT, TRAP, ALRM,
# XCPU, RTMIN) restores 350 W; a corrupt restore file has a documented way out. Every wait is
# bounded (about 45 s in all).
# Usage: agent_safety.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 4
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
SCRIPT
config() {  # config CONTROLLER [EXTRA_LINE]: writes $tmp/agent.yaml
  cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: $1
budget_w: 1400
${2:-}
$agent_local
YAML
}
caps() { { tr '\n' ' ' < "$tmp/state.txt"; } 2>/dev/null; }
found="0 350 1 350 2 350 3 350 "
status() { curl -s --max-time 2 "http://127.0.0.1:$port/v1/status"; }
post() { curl -s -o "$tmp/body" -w '%{http_code}' --max-time 3 -X POST \
  -H 'Content-Type: application/json' "http://127.0.0.1:$port$1" --data-binary "$2"; }
put() { curl -s -o "$tmp/body" -w '%{http_code}' --max-time 3 -X PUT \
  -H 'Content-Type: application/json' "http://127.0.0.1:$port$1" --data-binary "$2"; }
# wait_caps WANT: waits (<= 5 s) until the fake's caps read WANT.
wait_caps() {
  for _ in $(seq 50); do [ "$(caps)" = "$1" ] && return 0; sleep 0.1; done
  echo "  caps '$(caps)', want '$1'"
  return 1
}
start_agent() {  # start_agent NAME: background agent, waits for /healthz
  "$bin" agent --config "$tmp/agent.yaml" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  track_agent $!
  wait_healthz || { echo "  $1 never answered; stderr: $(tail -3 "$tmp/$1.err")"; return 1; }
}
stop_agent() {  # stop_agent SIGNAL: the agent exits (<= 10 s); sets $rc
  kill -"$1" "$agent"
  for _ in $(seq 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
  wait "$agent" 2>/dev/null; rc=$?
}

# 1. A job on GPU 0 only: GPUs 1-3 keep the caps in force (the controller's 250 W), never the
#    device default; an index the node does not have is refused.
config "static:knob=cap,value=250,period_s=0.1"
check "agent starts" start_agent job
check "the controller caps all four GPUs (no job: the node is one job)" \
  wait_caps "0 250 1 250 2 250 3 250 "
check "a job on GPU 0 registers (201)" test "$(post /v1/jobs '{"id":"half","gpus":[0]}')" = 201
sleep 0.5
check "GPUs no job lists keep their caps (not the 400 W default)" \
  test "$(caps)" = "0 250 1 250 2 250 3 250 "
check "gpus [99] on a 4-GPU node is 422" test "$(post /v1/jobs '{"id":"bad","gpus":[99]}')" = 422
check "the 422 names the field" grep -q "gpus" "$tmp/body"
check "a budget of 1e-300 W is refused" \
  bash -c "[[ '$(put /v1/budget '{"watts": 1e-300}')' =~ ^(400|422)$ ]]"
check "knobs answered as integers" bash -c "post_code=\$(curl -s --max-time 2 -X POST \
  -H 'Content-Type: application/json' http://127.0.0.1:$port/v1/jobs --data-binary \
  '{\"id\":\"k\",\"gpus\":[1],\"knobs\":{\"gen_concurrency\":{\"min\":8,\"max\":256,\"step\":8,\"default\":64}}}'); \
  grep -q '\"gen_concurrency\":64[,}]' <<< \"\$post_code\""
stop_agent TERM
check "SIGTERM exits 0 (rc=$rc)" test "$rc" -eq 0
check "SIGTERM restored the 350 W found" test "$(caps)" = "$found"

# 2. Uncontrolled (and every knob-only controller built on it): the caps found stay in force;
#    the device's default (400 W) is not the node's "uncontrolled".
config "uncontrolled"
check "uncontrolled agent starts" start_agent unc
sleep 0.6
check "uncontrolled leaves the 350 W found" test "$(caps)" = "$found"
check "a job registers and leaves" bash -c \
  "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST -H 'Content-Type: application/json' \
  http://127.0.0.1:$port/v1/jobs --data-binary '{\"id\":\"j\",\"gpus\":[0,1]}')\" = 201 ] && \
  curl -s -o /dev/null --max-time 2 -X DELETE http://127.0.0.1:$port/v1/jobs/j"
sleep 0.6
check "after the last job left the caps are still the 350 W found" test "$(caps)" = "$found"
stop_agent TERM

# 3. Ordinary job traffic: 4 clients loop register -> progress -> delete for 6 s while the
#    loop runs a cap controller; the agent stays up and restores on SIGTERM.
config "static:knob=cap,value=250,period_s=0.1"
check "traffic agent starts" start_agent traffic
traffic() {  # traffic CLIENT: register/progress/delete loop for 6 s
  local end=$((SECONDS + 6)) i=0
  while [ $SECONDS -lt $end ]; do
    i=$((i + 1))
    curl -s -o /dev/null --max-time 2 -X POST -H 'Content-Type: application/json' \
      "http://127.0.0.1:$port/v1/jobs" --data-binary "{\"id\":\"c$1-$i\",\"gpus\":[$(( $1 % 4 ))],
      \"knobs\":{\"gen_concurrency\":{\"min\":8,\"max\":64,\"step\":8}}}"
    curl -s -o /dev/null --max-time 2 -X POST -H 'Content-Type: application/json' \
      "http://127.0.0.1:$port/v1/jobs/c$1-$i/progress" --data-binary '{"tokens_total":1,"steps_total":1}'
    curl -s -o /dev/null --max-time 2 -X DELETE "http://127.0.0.1:$port/v1/jobs/c$1-$i"
  done
}
for c in 1 2 3 4; do traffic $c & done
wait $(jobs -p | grep -v "^$agent$") 2>/dev/null
check "the agent survived the job traffic" kill -0 "$agent"
check "and still answers" test "$(status | jq -r '.loop.ticks_total > 0')" = true
stop_agent TERM
check "SIGTERM after the traffic exits 0 (rc=$rc)" test "$rc" -eq 0
check "SIGTERM after the traffic restored 350 W" test "$(caps)" = "$found"
check "no restore file left" test ! -e "$tmp/saved.json"

# 4. Every catchable exit restores: HUP (the terminal closed), USR1, USR2, ABRT, and the
#    signals that killed it before (issue 44 N2): QUIT, TRAP, ALRM, XCPU, RTMIN.
for sig in HUP USR1 USR2 ABRT QUIT TRAP ALRM XCPU RTMIN; do
  check "$sig agent starts" start_agent "sig$sig"
  wait_caps "0 250 1 250 2 250 3 250 " >/dev/null
  stop_agent "$sig"
  # SIGABRT dies (its restore runs in a helper process that waits for the lock): allow it time.
  check "SIG$sig restored the 350 W found" wait_caps "$found"
  for _ in $(seq 50); do [ -e "$tmp/saved.json" ] || break; sleep 0.1; done
  check "SIG$sig left no restore file" test ! -e "$tmp/saved.json"
done

# 5. A truncated restore file: a normal start and --restore say what to do (exit 2), and
#    `--restore --to-default` sets every GPU to its default limit and removes the file.
check "an agent caps before the crash" start_agent crash
wait_caps "0 250 1 250 2 250 3 250 " >/dev/null
kill -9 "$agent"; wait "$agent" 2>/dev/null
head -c 20 "$tmp/saved.json" > "$tmp/cut.json" && mv "$tmp/cut.json" "$tmp/saved.json"
expect_exit2 "a start with a corrupt restore file names the way out" "--to-default" \
  agent --config "$tmp/agent.yaml" --duration-s 0.3
expect_exit2 "--restore with a corrupt restore file names the way out" "--to-default" \
  agent --config "$tmp/agent.yaml" --restore
err=$("$bin" agent --config "$tmp/agent.yaml" --restore 2>&1 >/dev/null)
check "the restore error is printed once" test "$(grep -c "restore file" <<< "$err")" -eq 1
"$bin" agent --config "$tmp/agent.yaml" --restore --to-default 2>"$tmp/todefault.err"
rc=$?
check "--restore --to-default exits 0 (rc=$rc: $(cat "$tmp/todefault.err"))" test "$rc" -eq 0
check "--restore --to-default set the 400 W default" test "$(caps)" = "0 400 1 400 2 400 3 400 "
check "--restore --to-default removed the corrupt file" test ! -e "$tmp/saved.json"
# 6. A knob controller on a node: it starts with no job registered (nothing to act on yet), the
#    status says why it cannot act and the safe setting holds the budget (no_actuator); a job
#    exposing the knob ends the fallback; a controller PUT right after a registration is taken.
rm -f "$tmp/state.txt"  # the node as found again: 350 W (section 5 left the 400 W default)
config "pid:knob=gen_concurrency"
sed -i 's/^budget_w: .*/budget_w: 1200/' "$tmp/agent.yaml"
check "a knob controller starts on a node with no job" start_agent knob
reason() { status | jq -r '.fallback_reason'; }
ok=1
for _ in $(seq 30); do [ "$(reason)" = no_actuator ] && { ok=0; break; }; sleep 0.1; done
check "with no job exposing its knob the status says no_actuator" test $ok -eq 0
check "and the safe share (1200 W / 4) is in force" wait_caps "0 300 1 300 2 300 3 300 "
check "a job exposing gen_concurrency registers" test "$(post /v1/jobs '{"id":"g","gpus":[0,1,2,3],
  "knobs":{"gen_concurrency":{"min":8,"max":256,"step":8,"default":64}}}')" = 201
check "a controller PUT right after the registration is accepted" \
  test "$(put /v1/controller '{"controller":"threshold:knob=gen_concurrency"}')" = 202
ok=1
for _ in $(seq 30); do [ "$(reason)" = "" ] && { ok=0; break; }; sleep 0.1; done
check "the job ends the no_actuator fallback" test $ok -eq 0
stop_agent TERM
check "the knob run restored the 350 W found (rc=$rc, caps $(caps))" test "$(caps)" = "$found"
finish agent_safety

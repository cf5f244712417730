#!/usr/bin/env bash
# flexwatt agent fault tests on the fake NVML library (caps kept across processes through
# FAKE_NVML_STATE, as a driver keeps them): kill -9 then --restore; kill -9 then the next start;
# SIGTERM restores before exit; a second agent is refused; a telemetry stall falls back to the
# safe setting; bad requests change nothing; a node that refuses cap writes is refused at start
# (exit 2) unless read_only. Every wait is bounded (about 15 s in all).
# Usage: agent_faults.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=400
SCRIPT
cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: static:knob=cap,value=250,period_s=0.1
budget_w: 500
$agent_local
YAML
caps() { { tr '\n' ' ' < "$tmp/state.txt"; } 2>/dev/null; }
status() { curl -s --max-time 2 "http://127.0.0.1:$port/v1/status"; }
start_agent() {  # start_agent LOG: background agent; waits (<= 5 s) until it has capped
  "$bin" agent --config "$tmp/agent.yaml" >"$tmp/$1.out" 2>"$tmp/$1.err" &
  track_agent $!
  for _ in $(seq 50); do
    [ "$(caps)" = "0 250 1 250 " ] && return 0
    sleep 0.1
  done
  echo "  $1: caps '$(caps)' after 5 s; agent stderr: $(tail -3 "$tmp/$1.err" | tr '\n' ' ')"
  return 1
}

# 0. read_only: a full run writes no cap at all (the fake keeps no state file).
{ echo "read_only: true"; cat "$tmp/agent.yaml"; } > "$tmp/ro.yaml"
"$bin" agent --config "$tmp/ro.yaml" --duration-s 0.5 --json >"$tmp/ro.json" 2>"$tmp/ro.err"
rc=$?
check "read_only run exits 0 ($(tail -1 "$tmp/ro.err"))" test $rc -eq 0
check "read_only summary says read_only, not restored" \
  test "$(jq -c '[.read_only, has("restored")]' "$tmp/ro.json")" = "[true,false]"
check "read_only wrote no cap" test ! -e "$tmp/state.txt"
check "read_only saved nothing" test ! -e "$tmp/saved.json"

# 0b. Cap writes refused (no root / CAP_SYS_ADMIN): the start-up write check refuses control mode
# (exit 2, one line naming the GPU, the call, the error and read_only), nothing written or saved;
# read_only runs there.
{ cat "$tmp/script.txt"; echo "fail nvmlDeviceSetPowerManagementLimit no_permission"; } \
  > "$tmp/noperm.txt"
FAKE_NVML_SCRIPT=$tmp/noperm.txt "$bin" agent --config "$tmp/agent.yaml" --duration-s 0.3 \
  >/dev/null 2>"$tmp/noperm.err"
rc=$?
check "cap writes refused: exit 2 (rc=$rc: $(tail -1 "$tmp/noperm.err"))" test $rc -eq 2
check "the refusal names GPU, call, error and the way out" grep -qE \
  'nvmlDeviceSetPowerManagementLimit \(GPU 0\).*NVML_ERROR_NO_PERMISSION.*CAP_SYS_ADMIN.*read_only: true' \
  "$tmp/noperm.err"
check "the refused start wrote and saved nothing" \
  bash -c "test ! -e '$tmp/state.txt' && test ! -e '$tmp/saved.json'"
FAKE_NVML_SCRIPT=$tmp/noperm.txt "$bin" agent --config "$tmp/ro.yaml" --duration-s 0.3 \
  >/dev/null 2>"$tmp/noperm-ro.err"
rc=$?
check "read_only runs where cap writes are refused (rc=$rc)" test $rc -eq 0

# 1. kill -9 leaves the caps written and the restore file; --restore puts them back.
check "agent caps both GPUs to 250 W" start_agent run1
check "GPU UUIDs from nvmlDeviceGetUUID in the status" \
  test "$(status | jq -r '.gpus[1].uuid')" = "GPU-fa4e0000-0000-4000-8000-000000000001"
check "and as the UUID label in /metrics" grep -q 'UUID="GPU-fa4e0000-0000-4000-8000-000000000000"' \
  <(curl -s --max-time 2 "http://127.0.0.1:$port/metrics")
kill -9 "$agent"; wait "$agent" 2>/dev/null
check "after kill -9 the caps are still 250 W" test "$(caps)" = "0 250 1 250 "
check "after kill -9 the restore file is there" test -s "$tmp/saved.json"
"$bin" agent --config "$tmp/agent.yaml" --restore 2>"$tmp/restore.err"
rc=$?
check "--restore exits 0 ($(cat "$tmp/restore.err"))" test $rc -eq 0
check "--restore put back 400 W" test "$(caps)" = "0 400 1 400 "
check "--restore removed the restore file" test ! -e "$tmp/saved.json"

# 2. kill -9, then the next start restores before it saves anew.
check "second run caps" start_agent run2
kill -9 "$agent"; wait "$agent" 2>/dev/null
"$bin" agent --config "$tmp/agent.yaml" --duration-s 0.3 --json >"$tmp/run3.out" 2>"$tmp/run3.err"
check "next start says it restored the previous run" grep -q "unclean exit" "$tmp/run3.err"
check "next start ends with the original 400 W" test "$(caps)" = "0 400 1 400 "

# 3. SIGTERM: restored before exit, exit 0; a second agent is refused meanwhile.
check "third run caps" start_agent run4
"$bin" agent --config "$tmp/agent.yaml" --duration-s 1 >/dev/null 2>"$tmp/second.err"
rc=$?
check "a second agent is refused (rc=$rc)" test "$rc" -eq 1
check "the refusal names the other agent" grep -q "another agent" "$tmp/second.err"
check "--restore refuses while an agent runs" \
  bash -c "! '$bin' agent --config '$tmp/agent.yaml' --restore 2>/dev/null"

# 4. Bad requests: the right status, nothing changed, the loop keeps ticking.
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X PUT -H 'Content-Type: application/json' \
  "http://127.0.0.1:$port$1" --data-binary "$2"; }
before=$(status | jq -c '.budget')
check "malformed budget -> 400" test "$(code /v1/budget '{"watts": ')" = 400
check "negative budget -> 400 or 422" bash -c "[[ '$(code /v1/budget '{"watts": -5}')' =~ ^(400|422)$ ]]"
big=$(head -c 100000 /dev/zero | tr '\0' 'x')
check "oversized body -> 413" test "$(code /v1/budget "{\"watts\": \"$big\"}")" = 413
check "unknown controller -> 422" test "$(code /v1/controller '{"spec": "nosuch"}')" = 422
t1=$(status | jq '.loop.ticks_total')
sleep 0.3
check "budget unchanged after bad requests" test "$(status | jq -c '.budget')" = "$before"
check "the loop kept ticking" test "$(status | jq '.loop.ticks_total')" -gt "$t1"
kill -TERM "$agent"; wait "$agent"; rc=$?
check "SIGTERM exits 0 (rc=$rc)" test "$rc" -eq 0
check "SIGTERM restored 400 W before exit" test "$(caps)" = "0 400 1 400 "
check "SIGTERM removed the restore file" test ! -e "$tmp/saved.json"

# 5. GPU 1 falls off the bus at its 10th read: the tick that finds it fails its read (one
#    stale_telemetry fallback, counted), the GPU is dropped and GPU 0 stays controlled.
echo "lost 1 after_reads=10" >> "$tmp/script.txt"
"$bin" agent --config "$tmp/agent.yaml" --duration-s 3 >/dev/null 2>"$tmp/stall.err" &
track_agent $!
ok=1
for _ in $(seq 30); do
  s=$(status)
  if [ "$(echo "$s" | jq -r '.lost_gpus[0].index // empty' 2>/dev/null)" = 1 ]; then ok=0; break; fi
  sleep 0.1
done
check "a lost GPU is named in lost_gpus" test $ok -eq 0
sleep 0.5
curl -s --max-time 2 "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"
check "/metrics counts the one-tick fallback" \
  grep -Eq 'flexwatt_fallbacks_total\{reason="stale_telemetry"[^}]*\} 1' "$tmp/metrics.txt"
check "/metrics: the fallback is over, GPU 0 stays controlled" \
  grep -Eq '^flexwatt_fallback_active(\{[^}]*\})? 0' "$tmp/metrics.txt"
check "/metrics: flexwatt_gpus_lost 1" grep -Eq '^flexwatt_gpus_lost(\{[^}]*\})? 1' "$tmp/metrics.txt"
wait "$agent"
rm -f "$tmp/state.txt"  # a reboot: the GPU is back, every limit at its default

# 6. A registered job that goes silent -> job_channel_silent; its report ends the fallback.
sed -i '/^lost/d' "$tmp/script.txt"
{ echo "job_silent_after_s: 0.5"; echo "safe_cap_w: 200"; cat "$tmp/agent.yaml"; } > "$tmp/job.yaml"
"$bin" agent --config "$tmp/job.yaml" --duration-s 6 >/dev/null 2>"$tmp/job.err" &
track_agent $!
wait_healthz
post() { curl -s -o /dev/null -w '%{http_code}' --max-time 2 -X POST -H 'Content-Type: application/json' \
  "http://127.0.0.1:$port$1" --data-binary "$2"; }
check "job registers (201)" test "$(post /v1/jobs '{"id": "j1", "kind": "grpo", "gpus": [0, 1],
  "knobs": {"gen_concurrency": {"min": 8, "max": 256, "step": 8, "default": 64}}}')" = 201
reason() { status | jq -r '.fallback_reason'; }
ok=1
for _ in $(seq 20); do [ "$(reason)" = job_channel_silent ] && { ok=0; break; }; sleep 0.1; done
check "a silent job puts the safe setting in force (job_channel_silent)" test $ok -eq 0
# The caps read back on a later tick than the one that put the fallback in force.
ok=1
for _ in $(seq 20); do [ "$(status | jq -c "[.gpus[].cap_w]")" = "[200,200]" ] && { ok=0; break; }; sleep 0.1; done
check "the safe setting is in force (safe_cap_w 200 W)" test $ok -eq 0
post /v1/jobs/j1/progress '{"tokens_total": 10, "steps_total": 1}' >/dev/null
ok=1
for _ in $(seq 20); do [ "$(reason)" = "" ] && { ok=0; break; }; sleep 0.05; done
check "a report ends the fallback" test $ok -eq 0
t1=$(status | jq '.loop.ticks_total')
sleep 0.3
check "the loop keeps ticking with a job registered" test "$(status | jq '.loop.ticks_total')" -gt "$t1"
kill -TERM "$agent"; wait "$agent"
check "restored after the job run" test "$(caps)" = "0 400 1 400 "
echo "fails=$fails"
[ "$fails" -eq 0 ]

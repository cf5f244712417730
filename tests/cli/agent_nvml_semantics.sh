#!/usr/bin/env bash
# flexwatt agent on real NVML semantics, against the fake NVML library's GPU profiles
# (tests/telemetry/fake_nvml: power following a load in wall time, the energy counter its
# integral, H100's averaged PowerUsage / field 185 and instant field 186, lost GPUs that stay
# lost, index order that changes between "boots" with stable UUIDs, root-only limit writes):
#  1. windows from the energy counter: 4 H100s run a square-wave step (0.102 s period, 600/200 W,
#     duty 0.5) that a 10 Hz sample aliases; the exact mean of every 2 s window lies within
#     2.6 % of 1600 W (a partial period), so under a 1728 W budget the exact violation rate is 0.
#     The agent must judge on the counters (source energy_counter) and report no violation
#     (a power-sample judge sees whole windows of high samples and counts about half).
#     The controller reads field 185 (the 1 s average, as the simulator gives an H100).
#  2. a GPU lost mid-run (Xid 79): it is dropped with an alert, the other three stay
#     controlled (a new controller's caps reach them), the stop restores the three, a restart
#     and `--restore` skip the lost one and say so.
#  3. an index shuffle between runs: the restore file is keyed by UUID, so `--restore` after
#     kill -9 and a "reboot" that reverses NVML's order puts each GPU's own cap back.
#  4. a non-root agent refuses control mode (exit 2) with the reason.
#  5. a hung NVML call blocks neither the loop nor the stop; `--restore` recovers.
# Every wait is bounded (about 70 s in all).
# Usage: agent_nvml_semantics.sh FLEXWATT_BIN SOURCE_DIR
set -u
bin=$1
source "$(dirname "$0")/lib/agent.sh"
use_fake_nvml
status() { curl -s --max-time 2 "http://127.0.0.1:$port/v1/status"; }
put() { curl -s -o "$tmp/body" -w '%{http_code}' --max-time 3 -X PUT \
  -H 'Content-Type: application/json' "http://127.0.0.1:$port$1" --data-binary "$2"; }
caps() { { tr '\n' ' ' < "$tmp/state.txt"; } 2>/dev/null; }
wait_caps() {  # wait_caps WANT: waits (<= 5 s) until the fake's state reads WANT
  for _ in $(seq 50); do [ "$(caps)" = "$1" ] && return 0; sleep 0.1; done
  echo "  caps '$(caps)', want '$1'"
  return 1
}
config() {  # config CONTROLLER BUDGET_W [EXTRA_LINE]
  cat > "$tmp/agent.yaml" <<YAML
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
controller: $1
budget_w: $2
${3:-}
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

# 1. Windows from the energy counter.
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 4
profile * h100
load * period_s=0.102 high_w=600 low_w=200 duty=0.5
SCRIPT
config "static:knob=cap,value=700,period_s=0.1" 1728 "window_s: 2
read_only: true"
check "1: agent starts on 4 H100s" start_agent windows
sleep 25
status > "$tmp/s1.json"
check "1: controls on field 185, a 1 s average" \
  jqt '[.gpus[] | select(.power_source == "nvml_field_power_average" and .power_averaging == "avg_1s")] | length == 4' "$tmp/s1.json"
check "1: windows judged on the energy counter" jqt '.windows[0].source == "energy_counter"' "$tmp/s1.json"
check "1: at least 8 windows judged" jqt '.windows[0].windows_total >= 8' "$tmp/s1.json"
check "1: no violation (the exact rate is 0)" jqt '.windows[0].violations_total == 0' "$tmp/s1.json"
check "1: the window mean is the load's (1600 W +- 5 %)" \
  jqt '.windows[0].mean_w > 1520 and .windows[0].mean_w < 1680' "$tmp/s1.json"
[ "$fails" -eq 0 ] || jq -c '.windows, [.gpus[] | .power_source, .power_w]' "$tmp/s1.json"
stop_agent
check "1: clean exit (rc $rc)" test "$rc" = 0
[ "$rc" = 0 ] || tail -5 "$tmp/windows.err"

# 2. A GPU lost mid-run.
rm -f "$tmp/state.txt"
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 4
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
lost 2 after_reads=30
SCRIPT
config "static:knob=cap,value=250,period_s=0.1" 1400
check "2: agent starts" start_agent lost
for _ in $(seq 60); do status | jq -e '.lost_gpus | length == 1' >/dev/null 2>&1 && break; sleep 0.1; done
status > "$tmp/s2.json"
check "2: the lost GPU is named" jqt '.lost_gpus[0].index == 2 and (.lost_gpus[0].reason | test("GPU_IS_LOST"))' "$tmp/s2.json"
check "2: three GPUs stay" jqt '[.gpus[].index] == [0, 1, 3]' "$tmp/s2.json"
# The tick that found it lost fails its read (one tick of the safe setting); then control goes on.
for _ in $(seq 30); do status | jq -e '.fallback_reason == ""' >/dev/null 2>&1 && break; sleep 0.1; done
check "2: control goes on (no fallback)" bash -c "curl -s --max-time 2 http://127.0.0.1:$port/v1/status | jq -e '.fallback_reason == \"\"' >/dev/null"
check "2: metric flexwatt_gpus_lost 1" bash -c \
  "curl -s --max-time 2 http://127.0.0.1:$port/metrics | grep -q '^flexwatt_gpus_lost{hostname=\"[^\"]*\"} 1$'"
check "2: a new controller reaches the three" test "$(put /v1/controller '{"controller":"static:knob=cap,value=220,period_s=0.1"}')" = 202
check "2: caps 220 on 0, 1, 3; GPU 2 untouched since" wait_caps "0 220 1 220 2 250 3 220 2 lost "
stop_agent
check "2: stop exits 0" test "$rc" = 0
check "2: the three restored" wait_caps "0 350 1 350 2 250 3 350 2 lost "
check "2: restore file removed" test ! -e "$tmp/saved.json"
check "2: the restart skips the lost GPU" start_agent lost2
check "2: ... and says so" grep -q "GPU 2 is unreachable" "$tmp/lost2.err"
check "2: ... and controls three" bash -c "curl -s --max-time 2 http://127.0.0.1:$port/v1/status | jq -e '[.gpus[].index] == [0, 1, 3]' >/dev/null"
kill -9 "$agent"; wait "$agent" 2>/dev/null
out=$("$bin" agent --config "$tmp/agent.yaml" --restore 2>&1); rc=$?
check "2: --restore after kill -9 exits 0 ($out)" test "$rc" = 0
check "2: --restore put the three back" wait_caps "0 350 1 350 2 250 3 350 2 lost "

# 3. An index shuffle between runs restores each GPU's own cap.
rm -f "$tmp/state.txt"
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 4
power * 300
limits * min=100 max=400 default=400
limits 0 enforced=350 limit=350
limits 1 enforced=300 limit=300
limits 2 enforced=250 limit=250
limits 3 enforced=200 limit=200
SCRIPT
config "static:knob=cap,value=150,period_s=0.1" 1400
check "3: agent starts" start_agent shuffle
check "3: caps 150" wait_caps "0 150 1 150 2 150 3 150 "
check "3: the restore file names UUIDs" jqt '[.caps[].uuid | startswith("GPU-")] == [true, true, true, true]' "$tmp/saved.json"
kill -9 "$agent"; wait "$agent" 2>/dev/null
echo "order 3 2 1 0" >> "$tmp/script.txt"  # the next boot enumerates the GPUs in reverse
out=$("$bin" agent --config "$tmp/agent.yaml" --restore 2>&1); rc=$?
check "3: --restore exits 0 ($out)" test "$rc" = 0
check "3: each GPU got its own cap back" wait_caps "0 350 1 300 2 250 3 200 "

# 4. A non-root agent refuses control mode, with the reason; read_only runs.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 0777 "$tmp"
  chmod 0666 "$tmp/state.txt" "$tmp/script.txt"
  rm -f "$tmp/agent.lock" "$tmp/agent.sock"  # root's, from the runs above
  config "static:knob=cap,value=150,period_s=0.1" 1400
  err=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$bin" agent --config "$tmp/agent.yaml" 2>&1 >/dev/null); rc=$?
  check "4: non-root control mode exits 2 (got $rc)" test "$rc" = 2
  check "4: ... naming the refused write and the way out" \
    grep -qE "NO_PERMISSION.*(root|CAP_SYS_ADMIN).*read_only" <<<"$err"
  check "4: caps untouched" wait_caps "0 350 1 300 2 250 3 200 "
else
  # Not root: the agent itself is the non-root case.
  config "static:knob=cap,value=150,period_s=0.1" 1400
  err=$("$bin" agent --config "$tmp/agent.yaml" 2>&1 >/dev/null); rc=$?
  check "4: non-root control mode exits 2 (got $rc)" test "$rc" = 2
  check "4: ... naming the refused write" grep -qE "NO_PERMISSION" <<<"$err"
fi

# 5. A hung NVML call (a wedged GPU) blocks neither the loop nor the exit: the read gives up
#    after nvml_deadline_s, the loop ticks on in its safe setting, the stop returns at once with
#    the restore file kept, and `--restore` (a new process) puts the caps back.
rm -f "$tmp/state.txt" "$tmp/agent.lock" "$tmp/agent.sock"
cat > "$tmp/script.txt" <<'SCRIPT'
gpus 2
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
hang nvmlDeviceGetPowerUsage gpu=1 after=30
SCRIPT
config "static:knob=cap,value=250,period_s=0.1" 700 "nvml_deadline_s: 0.5"
check "5: agent starts" start_agent hang
check "5: caps 250" wait_caps "0 250 1 250 "
for _ in $(seq 80); do status | jq -e '.fallback_reason == "stale_telemetry"' >/dev/null 2>&1 && break; sleep 0.1; done
t1=$(status | jq '.loop.ticks_total'); sleep 1; t2=$(status | jq '.loop.ticks_total')
check "5: the loop ticks on while the call hangs ($t1 -> $t2)" test "${t2:-0}" -gt "${t1:-0}"
check "5: in its safe setting" bash -c "curl -s --max-time 2 http://127.0.0.1:$port/v1/status | jq -e '.fallback_reason == \"stale_telemetry\"' >/dev/null"
start=$(date +%s)
stop_agent
check "5: the stop returns within 5 s" test $(($(date +%s) - start)) -le 5
check "5: ... saying the restore could not run (exit $rc)" grep -q "has not returned" "$tmp/hang.err"
check "5: the restore file is kept" test -e "$tmp/saved.json"
out=$("$bin" agent --config "$tmp/agent.yaml" --restore 2>&1); rc=$?
check "5: --restore exits 0 ($out)" test "$rc" = 0
check "5: --restore put the caps back" wait_caps "0 350 1 350 "

[ "$fails" -eq 0 ] || { jq -c "{fallback_reason, lost_gpus, fallbacks_total}" "$tmp/s2.json"; tail -5 "$tmp/lost.err"; }
finish agent_nvml_semantics

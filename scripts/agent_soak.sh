#!/usr/bin/env bash
# Soak of the node agent: mixed good and bad traffic on loopback for DURATION_S seconds, the
# agent's RSS sampled every 5 s. The agent runs on the fake NVML library (4 GPUs, 350 W found,
# cap controller at 10 Hz, the loop at SCHED_RR priority 10 as the systemd unit allows, a token
# file, the audit log on, TCP on 127.0.0.1). Run it as root (or with CAP_SYS_NICE). Bounded in time
# and in clients (8 curl loops, 40 idle connections held open), 127.0.0.1 only.
#
# Traffic: status and /metrics with a read token; job register -> progress -> knobs -> delete
# with a control token; writes without a token; malformed and oversized JSON; a chunked body
# over the limit; idle connections that never send a byte.
# Prints: RSS at the start, after warm-up (60 s) and at the end, the least-squares slope of RSS
# after warm-up (KiB/min), the loop's ticks, late ticks and skipped deadlines, and the answers
# counted by HTTP status. Exit 1 when the agent died or did not restore the caps.
#
# Usage: scripts/agent_soak.sh BUILD_DIR [DURATION_S=600]
set -u
build=${1:?usage: agent_soak.sh BUILD_DIR [DURATION_S]}
duration=${2:-600}
bin=$build/flexwatt
fake=$build/tests/telemetry/fake_nvml/libnvidia-ml.so.1
[ -x "$bin" ] && [ -f "$fake" ] || { echo "build $build first (flexwatt and fake_nvml)"; exit 2; }
tmp=$(mktemp -d)
port=$((20000 + RANDOM % 12000))
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cat > "$tmp/script.txt" <<'S'
gpus 4
power * 300
limits * min=100 max=400 default=400 enforced=350 limit=350
S
printf 'ops control ctl-token-0123456789\ngrafana read read-token-0123456789\n' > "$tmp/tokens"
chmod 600 "$tmp/tokens"
cat > "$tmp/agent.yaml" <<Y
backend: fake-nvml
nvml_library: $fake
period_s: 0.1
loop_priority: 10
controller: static:knob=cap,value=250
budget_w: 1400
restore_file: $tmp/saved.json
lock_file: $tmp/agent.lock
server:
  unix_socket: $tmp/agent.sock
  tcp_port: $port
  token_file: $tmp/tokens
  audit_log: $tmp/audit.jsonl
Y
export FAKE_NVML_SCRIPT=$tmp/script.txt FAKE_NVML_STATE=$tmp/state.txt
"$bin" agent --config "$tmp/agent.yaml" --json >"$tmp/summary.json" 2>"$tmp/agent.err" &
agent=$!
for _ in $(seq 50); do curl -sf --max-time 1 "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
base=http://127.0.0.1:$port
R=(-H "Authorization: Bearer read-token-0123456789")
C=(-H "Authorization: Bearer ctl-token-0123456789" -H "Content-Type: application/json")
end=$((SECONDS + duration))
loop() {  # loop NAME COMMAND...: runs COMMAND until the end, appending each HTTP code
  local name=$1; shift
  while [ $SECONDS -lt $end ]; do "$@" >> "$tmp/codes.$name" 2>/dev/null; echo >> "$tmp/codes.$name"; done
}
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }
jobs_cycle() {
  local id="soak-$BASHPID-$RANDOM"
  code "${C[@]}" -X POST "$base/v1/jobs" --data-binary "{\"id\":\"$id\",\"gpus\":[$((RANDOM % 4))],
    \"knobs\":{\"gen_concurrency\":{\"min\":8,\"max\":64,\"step\":8}}}"; echo
  code "${C[@]}" -X POST "$base/v1/jobs/$id/progress" --data-binary '{"tokens_total":5,"steps_total":1}'; echo
  code "${R[@]}" "$base/v1/jobs/$id/knobs"; echo
  code "${C[@]}" -X DELETE "$base/v1/jobs/$id"
}
# 200 KB bodies from a file (a command-line argument is limited to 128 KiB).
{ printf '{"watts": "'; head -c 200000 /dev/zero | tr '\0' 'x'; printf '"}'; } > "$tmp/big.json"
loop status code "${R[@]}" "$base/v1/status" & pids+=($!)
loop metrics code "${R[@]}" "$base/metrics" & pids+=($!)
loop jobs1 jobs_cycle & pids+=($!)
loop jobs2 jobs_cycle & pids+=($!)
loop notoken code -X POST -H "Content-Type: application/json" "$base/v1/jobs" --data-binary '{"id":"x"}' & pids+=($!)
loop malformed code "${C[@]}" -X PUT "$base/v1/budget" --data-binary '{"watts": ' & pids+=($!)
loop oversized code "${C[@]}" -X PUT "$base/v1/budget" --data-binary @"$tmp/big.json" & pids+=($!)
loop chunked code "${C[@]}" -X POST -H "Transfer-Encoding: chunked" "$base/v1/jobs" --data-binary @"$tmp/big.json" & pids+=($!)
# 40 idle connections, renewed whenever the agent closes them.
python3 - "$port" "$duration" <<'PY' & pids+=($!)
import socket, sys, time
port, duration = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + duration
socks = []
while time.time() < end:
    socks = [s for s in socks if s.fileno() >= 0]
    while len(socks) < 40:
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            break
    time.sleep(1)
    alive = []
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                s.close(); continue
        except BlockingIOError:
            pass
        except OSError:
            s.close(); continue
        alive.append(s)
    socks = alive
PY
t0=$SECONDS
: > "$tmp/rss"
while [ $SECONDS -lt $end ] && kill -0 "$agent" 2>/dev/null; do
  echo "$((SECONDS - t0)) $(awk '/VmRSS/ {print $2}' /proc/$agent/status)" >> "$tmp/rss"
  sleep 5
done
for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
pids=()
alive=1; kill -0 "$agent" 2>/dev/null || alive=0
final=$(curl -s --max-time 2 "${R[@]}" "$base/v1/status")
[ $alive -eq 1 ] && kill -TERM "$agent" && wait "$agent"
restored=$(tr '\n' ' ' < "$tmp/state.txt")
echo "soak: $duration s, agent alive at the end: $alive, caps after SIGTERM: $restored"
awk -v warm=60 -v half=$((duration / 2)) '
  { t[NR] = $1; r[NR] = $2 }
  END {
    n = 0; sx = sy = sxx = sxy = 0
    for (i = 1; i <= NR; ++i) if (t[i] >= warm) { n++; sx += t[i]; sy += r[i]; sxx += t[i]*t[i]; sxy += t[i]*r[i]; if (!w) w = r[i] }
    slope = n > 1 ? (n*sxy - sx*sy) / (n*sxx - sx*sx) * 60 : 0
    m = 0; sx = sy = sxx = sxy = 0
    for (i = 1; i <= NR; ++i) if (t[i] >= half) { m++; sx += t[i]; sy += r[i]; sxx += t[i]*t[i]; sxy += t[i]*r[i] }
    slope2 = m > 1 ? (m*sxy - sx*sy) / (m*sxx - sx*sx) * 60 : 0
    printf "RSS KiB: start %d, after warm-up %d, end %d, max %d; slope after warm-up %.1f KiB/min (%d samples), over the second half %.1f KiB/min (%d samples)\n", r[1], w, r[NR], max_r(r, NR), slope, n, slope2, m
  }
  function max_r(a, n,   m, i) { m = 0; for (i = 1; i <= n; ++i) if (a[i] > m) m = a[i]; return m }' "$tmp/rss"
echo "loop: $(jq -c '{ticks, late_ticks, missed_ticks, max_lateness_s}' "$tmp/summary.json" 2>/dev/null)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "$tmp"/codes.*; do
  printf '%-10s %s\n' "${f##*.}" "$(grep -v '^$' "$f" | sort | uniq -c | awk '{printf "%s×%s ", $2, $1}')"
done
echo "audit log: $(du -ch "$tmp"/audit.jsonl* 2>/dev/null | tail -1 | cut -f1) in $(ls "$tmp"/audit.jsonl* 2>/dev/null | wc -l) file(s)"
[ $alive -eq 1 ] && [ "$restored" = "0 350 1 350 2 350 3 350 " ]

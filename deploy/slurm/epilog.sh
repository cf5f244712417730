#!/bin/sh
# Slurm epilog (slurm.conf: Epilog=/etc/flexwatt/slurm/epilog.sh): stop the node agent (SIGTERM:
# it restores the caps it found before exiting; SIGKILL after 10 s), then --restore as a
# backstop if it died without restoring. Always exits 0 (a failed restore is in agent.log).
# Before stopping it, the job's budget account: the agent's GET /v1/status (budget in force,
# its source, trailing window mean, windows over budget) as one JSON line in job-budget.jsonl
# ({"job", "event": "job_end", "status"}; status null when the agent did not answer).
# Environment: as prolog.sh (FLEXWATT, FLEXWATT_CONFIG, FLEXWATT_RUN_DIR, FLEXWATT_LOG_DIR,
# FLEXWATT_SOCKET, FLEXWATT_TOKEN_FILE).
FLEXWATT=${FLEXWATT:-/usr/local/bin/flexwatt}
CONFIG=${FLEXWATT_CONFIG:-/etc/flexwatt/agent.yaml}
RUN_DIR=${FLEXWATT_RUN_DIR:-/run/flexwatt}
LOG_DIR=${FLEXWATT_LOG_DIR:-/var/log/flexwatt}
SOCKET=${FLEXWATT_SOCKET:-$RUN_DIR/agent.sock}
# alive PID: the process runs and is a flexwatt agent (not a PID reused since agent.pid).
alive() { kill -0 "$1" 2>/dev/null && grep -q 'agent' "/proc/$1/cmdline" 2>/dev/null; }
# wait_gone PID TENTHS: waits until PID has exited, at most TENTHS tenths of a second.
wait_gone() {
  n=0
  while [ "$n" -lt "$2" ] && alive "$1"; do sleep 0.1; n=$((n + 1)); done
  ! alive "$1"
}
if [ -S "$SOCKET" ]; then
  token=
  [ -n "${FLEXWATT_TOKEN_FILE:-}" ] && token=$(head -1 "$FLEXWATT_TOKEN_FILE" 2>/dev/null)
  status=$( { [ -z "$token" ] || printf 'header = "Authorization: Bearer %s"\n' "$token"; } |
    curl -sf --max-time 3 -K - --unix-socket "$SOCKET" http://flexwatt/v1/status 2>/dev/null)
  mkdir -p "$LOG_DIR"
  printf '{"job":"%s","event":"job_end","status":%s}\n' "${SLURM_JOB_ID:-unknown}" \
    "${status:-null}" >>"$LOG_DIR/job-budget.jsonl"
fi
if [ -f "$RUN_DIR/agent.pid" ]; then
  pid=$(cat "$RUN_DIR/agent.pid")
  if alive "$pid"; then
    kill -TERM "$pid"
    wait_gone "$pid" 100 || { kill -KILL "$pid"; wait_gone "$pid" 50; }
  fi
  rm -f "$RUN_DIR/agent.pid"
fi
mkdir -p "$RUN_DIR" "$LOG_DIR"  # --restore takes the lock there
"$FLEXWATT" agent --config "$CONFIG" --restore >>"$LOG_DIR/agent.log" 2>&1
exit 0

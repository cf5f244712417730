#!/bin/sh
# Slurm prolog (slurm.conf: Prolog=/etc/flexwatt/slurm/prolog.sh): start the node agent for the
# job's allocation. Any caps a killed agent left are restored first (--restore), then the
# agent starts in the background; its own lock refuses a second copy (a second job's prolog
# finds --restore refused while the agent runs and leaves it alone). Never fails the job.
# Environment (defaults for deploy/agent.yaml): FLEXWATT (the binary), FLEXWATT_CONFIG,
# FLEXWATT_RUN_DIR (restore file, lock, socket; agent.pid), FLEXWATT_LOG_DIR (audit log;
# agent.log, the agent's stderr; job-budget.jsonl).
#
# Per-job budget: the first of FLEXWATT_JOB_BUDGET_W (a site's PrologSlurmctld or wrapper may
# set it), `flexwatt_budget_w=W` in the job's comment or extra field (sbatch
# --comment=flexwatt_budget_w=4800 or --extra=...: SLURM_JOB_COMMENT / SLURM_JOB_EXTRA, else
# `scontrol show job`), with an optional window (FLEXWATT_JOB_WINDOW_S, flexwatt_window_s=S).
# The prolog waits for the agent (<= 10 s) and sends it as PUT /v1/budget over the agent's
# Unix socket (FLEXWATT_SOCKET, default $FLEXWATT_RUN_DIR/agent.sock), with the bearer token
# read from FLEXWATT_TOKEN_FILE (a file holding one control-scope token) when the agent has
# auth on. The outcome is one JSON line in job-budget.jsonl; a refused budget is logged there
# and the job still runs (under the node's configured budget).
FLEXWATT=${FLEXWATT:-/usr/local/bin/flexwatt}
CONFIG=${FLEXWATT_CONFIG:-/etc/flexwatt/agent.yaml}
RUN_DIR=${FLEXWATT_RUN_DIR:-/run/flexwatt}
LOG_DIR=${FLEXWATT_LOG_DIR:-/var/log/flexwatt}
SOCKET=${FLEXWATT_SOCKET:-$RUN_DIR/agent.sock}
mkdir -p "$RUN_DIR" "$LOG_DIR"
if "$FLEXWATT" agent --config "$CONFIG" --restore >>"$LOG_DIR/agent.log" 2>&1; then
  nohup "$FLEXWATT" agent --config "$CONFIG" </dev/null >>"$LOG_DIR/agent.log" 2>&1 &
  echo $! > "$RUN_DIR/agent.pid"
fi

# field KEY TEXT: the value of the first KEY=VALUE in TEXT (words split at blanks, commas and
# semicolons), empty when absent.
field() { printf '%s\n' "$2" | sed 's/[,;]/ /g' | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }
# number TEXT: TEXT is a plain decimal number (digits, at most one point).
number() { printf '%s\n' "$1" | grep -Eqx '[0-9]+([.][0-9]+)?'; }
job=${SLURM_JOB_ID:-unknown}
budget=${FLEXWATT_JOB_BUDGET_W:-}
window=${FLEXWATT_JOB_WINDOW_S:-}
meta="${SLURM_JOB_COMMENT:-} ${SLURM_JOB_EXTRA:-}"
if [ -z "$budget" ] && [ -z "$(field flexwatt_budget_w "$meta")" ] && [ -n "${SLURM_JOB_ID:-}" ] &&
   command -v scontrol >/dev/null 2>&1; then
  meta=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*\(Comment\|Extra\)=\([^ ]*\).*/\2/p' | tr '\n' ' ')
fi
[ -n "$budget" ] || budget=$(field flexwatt_budget_w "$meta")
[ -n "$window" ] || window=$(field flexwatt_window_s "$meta")
[ -n "$budget" ] || exit 0
# JSON-safe: only plain numbers get through (anything else is refused here, and logged).
if ! number "$budget" || { [ -n "$window" ] && ! number "$window"; }; then
  printf '{"job":"%s","event":"budget_refused","error":"not a number: budget %s window %s"}\n' \
    "$job" "$(printf %s "$budget" | tr -cd '0-9A-Za-z._-')" "$(printf %s "$window" | tr -cd '0-9A-Za-z._-')" \
    >>"$LOG_DIR/job-budget.jsonl"
  exit 0
fi
body="{\"watts\": $budget${window:+, \"window_s\": $window}}"
n=0
until curl -sf --max-time 1 --unix-socket "$SOCKET" http://flexwatt/healthz >/dev/null 2>&1; do
  n=$((n + 1))
  [ "$n" -lt 100 ] || break
  sleep 0.1
done
# The token goes to curl on its standard input (a config line), never on its command line.
token=
[ -n "${FLEXWATT_TOKEN_FILE:-}" ] && token=$(head -1 "$FLEXWATT_TOKEN_FILE" 2>/dev/null)
answer=$( { [ -z "$token" ] || printf 'header = "Authorization: Bearer %s"\n' "$token"; } |
  curl -s --max-time 5 -K - --unix-socket "$SOCKET" -X PUT -H 'Content-Type: application/json' \
    -w '\n%{http_code}' --data-binary "$body" http://flexwatt/v1/budget 2>&1)
code=$(printf '%s\n' "$answer" | tail -1)
reply=$(printf '%s\n' "$answer" | sed '$d' | tr -d '\n' | tr '"\134' "' ")  # no \ or " inside
event=budget_set
case "$code" in 2??) ;; *) event=budget_refused ;; esac
printf '{"job":"%s","event":"%s","budget":%s,"http_status":"%s","reply":"%s"}\n' \
  "$job" "$event" "$body" "$code" "$reply" >>"$LOG_DIR/job-budget.jsonl"
exit 0
